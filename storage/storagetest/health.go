package storagetest

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/remote"
)

// The endpoint circuit breaker (remote.Health) of a cloud backend, met on
// a real test server behind Toxiproxy: an endpoint that is gone
// (connection refused) or silent (accepts, never answers) is declared down
// after DownAfter, requests then fail at once with one line naming the
// endpoint and the cause, without a request on the wire; when it is back,
// the probe notices, and reads return the true bytes again without
// reopening the store; each change is one log line; an endpoint that
// answers, even with errors, is never declared down; a negative DownAfter
// keeps every request on its own retries; no goroutine outlives the store.

// HealthStore is a cloud backend's store as RunHealth uses it.
type HealthStore interface {
	storage.Storage
	io.Closer
	Stats() remote.Stats
}

// HealthCloud describes a backend for RunHealth.
type HealthCloud struct {
	// Name is the backend's name in its log lines ("s3: the endpoint is
	// unreachable"): s3, azure, gcs.
	Name string
	// Server is the test server's http://127.0.0.1:PORT (started before
	// RunHealth, so that its goroutines are not counted as leaked); each
	// subtest puts a Toxiproxy in front.
	Server string
	// Open opens a fresh, empty, writable table on the server at base
	// (http://127.0.0.1:PORT, the proxy's: the backend adds what its
	// endpoints need, such as Azurite's account path) with tune; the
	// store's Close belongs to t's cleanup.
	Open func(t *testing.T, base string, tune remote.Tuning) HealthStore
	// Secrets must never appear in an error or a log line.
	Secrets []string
}

// healthEnv is one store of the suite, with fast retries and a short
// DownAfter, logging at debug level into log.
type healthEnv struct {
	c     HealthCloud
	st    HealthStore
	log   *testkit.SyncBuffer
	proxy *cloudtest.Proxy
}

func newHealthEnv(t *testing.T, c HealthCloud, tune func(*remote.Tuning)) *healthEnv {
	t.Helper()
	e := &healthEnv{c: c, log: &testkit.SyncBuffer{}}
	e.proxy = cloudtest.StartProxy(t, c.Server)
	o := remote.Tuning{
		MaxAttempts:    20,
		MaxBackoff:     50 * time.Millisecond,
		RequestTimeout: 2 * time.Second,
		DownAfter:      300 * time.Millisecond,
		ProbeInterval:  200 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tune != nil {
		tune(&o)
	}
	e.st = c.Open(t, e.proxy.Endpoint, o)
	return e
}

// lines are the log lines at level (INFO, WARN, ...) holding msg.
func (e *healthEnv) lines(level, msg string) []string {
	return testkit.LogLines(e.log.String(), level, msg)
}

// unreachable is the error of a request while the endpoint is down: one
// line naming the table, the endpoint and the cause.
func (e *healthEnv) unreachable(cause string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(e.st.Location()) + `: endpoint ` + regexp.QuoteMeta(e.proxy.Endpoint) +
		` unreachable since \d\d:\d\d:\d\d \(` + regexp.QuoteMeta(cause) + `\); retrying every 200ms$`)
}

// noSecrets fails t if s holds one of the cloud's secrets.
func (e *healthEnv) noSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, sec := range e.c.Secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Fatalf("%s holds a secret:\n%s", what, s)
		}
	}
}

// read reads key whole (want bytes) within 20 s; a read past that is a
// hang, not a failure.
func (e *healthEnv) read(t *testing.T, key string, n int) ([]byte, error, time.Duration) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	start := time.Now()
	go func() {
		p := make([]byte, n)
		k, err := e.st.ReadAt(ctxT(t), key, p, 0)
		if err == io.EOF && k == n {
			err = nil
		}
		ch <- res{p[:k], err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err, time.Since(start)
	case <-time.After(20 * time.Second):
		t.Fatalf("reading %s did not end in 20 s", key)
		return nil, nil, 0
	}
}

// waitBack reads key until it returns want (the probe found the endpoint
// back) or 10 s pass.
func (e *healthEnv) waitBack(t *testing.T, key string, want []byte) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		b, err, _ := e.read(t, key, len(want))
		if err == nil {
			if !bytes.Equal(b, want) {
				t.Fatalf("%s after the endpoint came back: wrong bytes", key)
			}
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("reads still fail 10 s after the endpoint came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RunHealth runs the endpoint-health suite as subtests of t.
func RunHealth(t *testing.T, c HealthCloud) {
	t.Run("Dead", func(t *testing.T) { testHealthDown(t, c, false) })
	t.Run("Silent", func(t *testing.T) { testHealthDown(t, c, true) })
	t.Run("AnswersAreUp", func(t *testing.T) { testHealthAnswers(t, c) })
	t.Run("NeverDown", func(t *testing.T) { testHealthNeverDown(t, c) })
}

// testHealthDown: the endpoint dies (the proxy stops: connection refused)
// or goes silent (Toxiproxy's timeout toxic), then comes back.
func testHealthDown(t *testing.T, c HealthCloud, silent bool) {
	cloudtest.CheckGoroutines(t)
	e := newHealthEnv(t, c, func(o *remote.Tuning) {
		if silent {
			o.RequestTimeout = 400 * time.Millisecond
			o.DownAfter = time.Second
		}
	})
	a, b := randBytes(1, 3000), randBytes(2, 5000)
	put(t, e.st, "data/a", a)
	put(t, e.st, "data/b", b)
	if got, err, _ := e.read(t, "data/a", len(a)); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("before the fault: %v", err)
	}

	cause, down, up := "connection refused", func() { e.proxy.Stop() }, func() { e.proxy.Start(t) }
	if silent {
		cause = "no answer within 400ms"
		down = func() { e.proxy.AddToxic(t, "silent", "timeout", "downstream", 1, map[string]any{"timeout": 0}) }
		up = func() { e.proxy.RemoveToxic(t, "silent") }
	}
	down()
	isUp := false
	defer func() {
		if !isUp {
			up()
		}
	}()

	// The first read pays attempts until the endpoint is declared down,
	// not its whole retry budget (20 attempts).
	re := e.unreachable(cause)
	_, err, el := e.read(t, "data/b", len(b))
	if err == nil || !re.MatchString(err.Error()) {
		t.Fatalf("read of a %s endpoint after %v = %v, want %s", map[bool]string{false: "dead", true: "silent"}[silent], el, err, re)
	}
	if errors.Is(err, storage.ErrNotExist) || !storage.IsTableWide(err) {
		t.Errorf("unreachable: ErrNotExist %v, table-wide %v", errors.Is(err, storage.ErrNotExist), storage.IsTableWide(err))
	}
	if el > 10*time.Second {
		t.Errorf("the first read failed after %v: it paid its retries instead of failing once the endpoint was down", el)
	}
	t.Logf("first read: %v after %v", err, el.Round(time.Millisecond))
	if down := e.lines("WARN", c.Name+": the endpoint is unreachable"); len(down) != 1 ||
		!strings.Contains(down[0], "endpoint="+e.proxy.Endpoint) || !strings.Contains(down[0], cause) {
		t.Errorf("want one warning declaring the endpoint down, naming it and the cause, got %q", down)
	}
	if !silent {
		if r := e.lines("INFO", c.Name+": a request failed; retrying"); len(r) != 1 || !strings.Contains(r[0], "key=data/b") || !strings.Contains(r[0], cause) {
			t.Errorf("want one info line saying what is retried, got %q", r)
		}
	}

	// Down: every read (pinned or not), stat and list fails at once, with
	// no GET or HEAD on the wire (the probe's lists are).
	s0 := e.st.Stats()
	start := time.Now()
	for i := range 100 {
		key := []string{"data/a", "data/b"}[i%2]
		_, err, el := e.read(t, key, 10)
		if err == nil || !re.MatchString(err.Error()) {
			t.Fatalf("read %d while down = %v", i, err)
		}
		if el > time.Second {
			t.Errorf("read %d while down took %v: it does not fail fast", i, el)
		}
		e.noSecrets(t, "the error", err.Error())
	}
	t.Logf("100 reads while down: %v", time.Since(start).Round(time.Millisecond))
	if _, err := e.st.Stat(ctxT(t), "data/new"); err == nil || !re.MatchString(err.Error()) {
		t.Errorf("Stat while down = %v", err)
	}
	if _, err := e.st.List(ctxT(t), "data/", ""); err == nil || !re.MatchString(err.Error()) {
		t.Errorf("List while down = %v", err)
	}
	if s := e.st.Stats(); s.Gets+s.Heads != s0.Gets+s0.Heads {
		t.Errorf("%d GETs and HEADs sent while the endpoint is down", s.Gets+s.Heads-s0.Gets-s0.Heads)
	}

	// Back: the probe notices; reads return the true bytes, the store
	// was never reopened.
	up()
	isUp = true
	d := e.waitBack(t, "data/b", b)
	t.Logf("reads succeed %v after the endpoint came back", d.Round(time.Millisecond))
	if got, err, _ := e.read(t, "data/a", len(a)); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("read after recovery: %v", err)
	}
	if up := e.lines("INFO", c.Name+": the endpoint answers again"); len(up) != 1 || !strings.Contains(up[0], "down_for=") {
		t.Errorf("want one info line when the endpoint is back, got %q", up)
	}
	if n := len(e.lines("WARN", c.Name+": the endpoint is unreachable")); n != 1 {
		t.Errorf("%d warnings that the endpoint is down, want 1", n)
	}
	e.noSecrets(t, "the log", e.log.String())
}

// testHealthAnswers: an endpoint that answers every request with 503 is
// up, however long it does: each read spends its retries and fails with
// the server's error, never as unreachable.
func testHealthAnswers(t *testing.T, c HealthCloud) {
	cloudtest.CheckGoroutines(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c.Server = srv.URL
	e := newHealthEnv(t, c, func(o *remote.Tuning) { o.DownAfter = time.Millisecond; o.MaxAttempts = 3 })
	for range 3 {
		_, err, _ := e.read(t, "k", 10)
		if err == nil || strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("read of an endpoint that answers 503 = %v, want the server's error", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if down := e.lines("WARN", c.Name+": the endpoint is unreachable"); len(down) != 0 {
		t.Errorf("declared down on 503s: %q", down)
	}
}

// testHealthNeverDown: a negative DownAfter keeps every request on its own
// retries, however long the endpoint stays dead.
func testHealthNeverDown(t *testing.T, c HealthCloud) {
	cloudtest.CheckGoroutines(t)
	e := newHealthEnv(t, c, func(o *remote.Tuning) { o.DownAfter = -1; o.MaxAttempts = 4 })
	put(t, e.st, "a", []byte("0123456789"))
	if _, err, _ := e.read(t, "a", 10); err != nil {
		t.Fatal(err)
	}
	e.proxy.Stop()
	defer e.proxy.Start(t)
	for range 3 {
		s0 := e.st.Stats()
		_, err, _ := e.read(t, "a", 10)
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
			t.Fatalf("read = %v, want connection refused after 4 attempts", err)
		}
		if n := e.st.Stats().Gets - s0.Gets; n != 4 {
			t.Fatalf("%d GETs, want 4", n)
		}
	}
	if down := e.lines("WARN", c.Name+": the endpoint is unreachable"); len(down) != 0 {
		t.Errorf("declared down with DownAfter < 0: %q", down)
	}
}
