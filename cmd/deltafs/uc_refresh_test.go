package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/internal/mounttest"
)

// readUncached reads a file and then drops its pages from the kernel page
// cache, so that the next read of it reaches the mount (and, with no
// memory or disk cache, S3).
func readUncached(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return b, err
}

// ucMountFlags: JSON samples, no memory or disk cache (every read reaches
// S3), a poll of the log every second (S3 lists all along).
func ucMountFlags(endpoint string, extra ...string) []string {
	return append(append([]string{"--data-column", "-", "--cache-dir", "none", "--mem-cache", "0", "--refresh", "1s"}, s3Flags(endpoint)...), extra...)
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestUCCredentialRefresh: sessions live 3 s; a mount reads every sample
// again and again for 12 s (four lifetimes) without one failed read, S3
// never sees an expired session, several sessions sign its requests, and
// the log says at info level each time it renewed. At --log-level debug,
// neither the log, /metrics nor .deltafs/stats holds the catalog token or
// any vended secret.
func TestUCCredentialRefresh(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	const name = "dat-with_checkpoint"
	f := startUC(t, 3*time.Second, []string{name})
	addr := freeAddr(t)
	m := mounttest.Start(t, bin, "uc://"+ucName(name), ucMountFlags(f.endpoint, "--log-level", "debug", "--metrics-addr", addr)...)
	shard := filepath.Join(m.Dir, "latest", "shard", "0")
	names := samplesUnder(t, shard)
	if len(names) == 0 {
		t.Fatal("no samples")
	}
	want := map[string][]byte{}
	reads := 0
	for start := time.Now(); time.Since(start) < 12*time.Second; {
		for _, n := range names {
			b, err := readUncached(filepath.Join(shard, n))
			if err != nil {
				t.Fatalf("read %d (after %v): %s: %v", reads, time.Since(start).Round(time.Millisecond), n, err)
			}
			if w, ok := want[n]; ok && string(w) != string(b) {
				t.Fatalf("%s: other bytes on a later read", n)
			}
			want[n] = b
			reads++
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e := f.uc.Expired.Load(); e != 0 {
		t.Errorf("S3 refused %d requests signed with an expired session", e)
	}
	if r := f.uc.Refused.Load(); r != 0 {
		t.Errorf("S3 refused %d requests", r)
	}
	if n := f.uc.SessionsUsed(); n < 4 {
		t.Errorf("%d sessions signed requests in four lifetimes, want 4 at least", n)
	}
	log := m.Log()
	if n := strings.Count(log, `level=INFO msg="unity catalog: renewed the vended credentials"`); n < 3 {
		t.Errorf("%d renewals logged at info level, want 3 at least:\n%s", n, log)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stats, err := os.ReadFile(filepath.Join(m.Dir, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stats), `"s3"`) {
		t.Errorf(".deltafs/stats of a catalog table lacks the S3 backend's counters:\n%s", stats)
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	log = m.Log()
	for _, s := range f.uc.Secrets() {
		for what, text := range map[string]string{"log": log, "/metrics": string(metrics), ".deltafs/stats": string(stats)} {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds a secret (%.8s...)", what, s)
			}
		}
	}
	if len(f.uc.Secrets()) < 9 {
		t.Errorf("only %d secrets to look for", len(f.uc.Secrets()))
	}
	t.Logf("%d reads, %d sessions vended, %d used", reads, f.uc.Vended.Load(), f.uc.SessionsUsed())
}

// TestUCRevoked: a grant revoked while a table is mounted fails the next
// reads with EIO within a bound (the next renewal: two thirds of the 3 s
// lifetime), never a hang, and the mount says why in one warning.
func TestUCRevoked(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	const name = "dat-basic_append"
	f := startUC(t, 3*time.Second, []string{name})
	m := mounttest.Start(t, bin, "uc://"+ucName(name), ucMountFlags(f.endpoint)...)
	shard := filepath.Join(m.Dir, "latest", "shard", "0")
	names := samplesUnder(t, shard)
	for _, n := range names {
		if _, err := readUncached(filepath.Join(shard, n)); err != nil {
			t.Fatalf("%s before revoking: %v", n, err)
		}
	}
	f.uc.Revoke(ucName(name))
	revoked := time.Now()
	var failedAt time.Duration
	for failedAt == 0 {
		if time.Since(revoked) > 20*time.Second {
			t.Fatal("reads still work 20 s after the grant was revoked")
		}
		for _, n := range names {
			start := time.Now()
			_, err := readUncached(filepath.Join(shard, n))
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("a read took %v", d)
			}
			if err != nil {
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("%s: %v, want EIO", n, err)
				}
				failedAt = time.Since(revoked)
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// From then on every read fails.
	for _, n := range names {
		if _, err := readUncached(filepath.Join(shard, n)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("%s after the refusal: %v, want EIO", n, err)
		}
	}
	log := m.Log()
	if c := strings.Count(log, "refuses to renew read credentials"); c != 1 {
		t.Errorf("%d lines about the refusal, want 1:\n%s", c, log)
	}
	if !strings.Contains(log, "PERMISSION_DENIED") {
		t.Errorf("the log does not say the catalog denied permission:\n%s", log)
	}
	t.Logf("reads failed %v after the revocation", failedAt.Round(time.Millisecond))
}
