package unity

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// Credentials that are dead when they come, and renewals that fail: the
// catalog is asked at a bounded pace (a floor, then a back-off), the
// failure and the recovery are logged once each, and the credentials'
// errors are one line. Credentials expiring in the past used to be renewed
// at once, again and again: thousands of requests and log lines a second.

// captureLog makes slog's default logger (which Open uses) write text to
// the returned buffer for the test.
func captureLog(t *testing.T) *testkit.SyncBuffer {
	var buf testkit.SyncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// openLocal registers a local table in uc and opens it by name.
func openLocal(t *testing.T, uc *unitytest.Server) (*Table, error) {
	t.Helper()
	uc.AddTable("main.default.t", filepath.Join(testkit.Tables(), "dat-basic_append"))
	st, err := Open(context.Background(), "uc://main.default.t", ucOptions(t, uc))
	if err != nil {
		return nil, err
	}
	tb := st.(*Table)
	t.Cleanup(func() { tb.Close() })
	return tb, nil
}

// TestVendedDeadAtOpen: credentials that expired before they came (or a
// millisecond after) fail the open with one line, after one request.
func TestVendedDeadAtOpen(t *testing.T) {
	for _, life := range []time.Duration{-time.Hour, time.Millisecond} {
		uc := unitytest.Start(t, time.Hour, "k", "s")
		uc.SetVendLifetime(life)
		_, err := openLocal(t, uc)
		if err == nil {
			t.Fatalf("lifetime %v: opened", life)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "uc://main.default.t: ") || !strings.Contains(msg, "vended credentials that expire at") || strings.Contains(msg, "\n") {
			t.Fatalf("lifetime %v: %q, want one line naming the table and the dead credentials", life, msg)
		}
		if n := uc.VendRequests.Load(); n != 1 {
			t.Errorf("lifetime %v: %d vend requests, want 1", life, n)
		}
		t.Log(msg)
	}
}

// TestVendedDeadRenewals: once the catalog vends only dead credentials,
// renewals come at the floor's pace and then slower (1 s, 2 s, ...), the
// failure is logged once, and Credentials fails with one line once the
// last live ones expire.
func TestVendedDeadRenewals(t *testing.T) {
	log := captureLog(t)
	uc := unitytest.Start(t, 3*time.Second, "k", "s") // live for 2 to 3 s
	tb, err := openLocal(t, uc)
	if err != nil {
		t.Fatal(err)
	}
	uc.SetVendLifetime(-time.Hour)
	start := time.Now()
	time.Sleep(5 * time.Second)
	n := uc.VendRequests.Load() - 1
	// Due at 2/3 of the life (1.3 to 2 s), then after 1 s and 2 s: 3.
	if n < 1 || n > 4 {
		t.Errorf("%d renewal requests in %v, want 1 to 4", n, time.Since(start).Round(time.Millisecond))
	}
	if got := testkit.LogLines(log.String(), "WARN", "renewing the vended credentials fails"); len(got) != 1 {
		t.Errorf("%d warnings, want 1:\n%s", len(got), log)
	}
	_, err = tb.vended.Credentials(context.Background())
	if err == nil || !strings.Contains(err.Error(), "could not be renewed (the catalog vended credentials that expire at") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v, want one line saying the renewal brings dead credentials", err)
	}
	t.Logf("%d renewal requests in 5 s; %v", n, err)
}

// TestVendedFailsThenRecovers: renewals that fail are tried again after
// pauses that double up to the cap; one warning when they start failing,
// one line when they work again, and Credentials works again.
func TestVendedFailsThenRecovers(t *testing.T) {
	fastRenewals(t, 100*time.Millisecond, 400*time.Millisecond)
	log := captureLog(t)
	uc := unitytest.Start(t, 2*time.Second, "k", "s")
	tb, err := openLocal(t, uc)
	if err != nil {
		t.Fatal(err)
	}
	const failures = 6
	uc.FailVends(failures, http.StatusBadRequest) // not retried by the client: one request a renewal
	// The renewal is due after 2/3 of 1 to 2 s; then pauses of 0.1, 0.2,
	// 0.4, 0.4, 0.4 s: recovered after about 3.5 s.
	deadline := time.Now().Add(10 * time.Second)
	for testkit.LogLines(log.String(), "INFO", "renewing the vended credentials works again") == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery in 10 s; %d vend requests:\n%s", uc.VendRequests.Load(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := uc.VendRequests.Load(); n != 1+failures+1 {
		t.Errorf("%d vend requests, want %d", n, 1+failures+1)
	}
	if got := testkit.LogLines(log.String(), "WARN", "renewing the vended credentials fails", "failing on purpose"); len(got) != 1 {
		t.Errorf("%d warnings, want 1:\n%s", len(got), log)
	}
	if got := testkit.LogLines(log.String(), "INFO", "works again"); len(got) != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", len(got), log)
	}
	if _, err := tb.vended.Credentials(context.Background()); err != nil {
		t.Fatalf("after the recovery: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	fastRenewals(t, time.Second, time.Minute)
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 32 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}
