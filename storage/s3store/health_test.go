package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// The store's health (circuit breaker): an endpoint that cannot be
// reached is declared down after Options.DownAfter, requests then fail at
// once without a request on the wire, a probe finds the endpoint back and
// requests resume, all without reopening the store; each change is one
// log line.

// healthEnv is a store with fast retries and a short DownAfter, logging
// at debug level into log.
type healthEnv struct {
	st     *s3store.Store
	log    *testkit.SyncBuffer
	bucket string
}

func newHealthEnv(t *testing.T, endpoint, bucket string, tune func(*s3store.Options)) *healthEnv {
	t.Helper()
	e := &healthEnv{log: &testkit.SyncBuffer{}, bucket: bucket}
	o := testOptions(endpoint)
	o.MaxAttempts = 20
	o.MaxBackoff = 50 * time.Millisecond
	o.RequestTimeout = 2 * time.Second
	o.DownAfter = 300 * time.Millisecond
	o.ProbeInterval = 200 * time.Millisecond
	o.Logger = slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if tune != nil {
		tune(&o)
	}
	e.st = open(t, "s3://"+bucket+"/t", o)
	return e
}

// lines are the log lines at level (INFO, WARN, ...) holding msg.
func (e *healthEnv) lines(level, msg string) []string {
	return testkit.LogLines(e.log.String(), level, msg)
}

const (
	msgRetrying = "s3: a request failed; retrying"
	msgDown     = "s3: the endpoint is unreachable"
	msgUp       = "s3: the endpoint answers again"
	msgSlow     = "s3: no answer from the endpoint yet"
)

// unreachableRE is the error of a request while the endpoint is down.
func unreachableRE(bucket, endpoint, cause string) *regexp.Regexp {
	return regexp.MustCompile(`^s3://` + regexp.QuoteMeta(bucket) + `/t: endpoint ` + regexp.QuoteMeta(endpoint) +
		` unreachable since \d\d:\d\d:\d\d \(` + regexp.QuoteMeta(cause) + `\); retrying every 200ms$`)
}

// waitRead retries a read until it succeeds (the probe found the endpoint
// back) or d passes.
func waitRead(t *testing.T, st *s3store.Store, key string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		p := make([]byte, 10)
		_, err := st.ReadAt(ctxT(t), key, p, 0)
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("reads still fail %v after the endpoint came back: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHealthDeadEndpoint: a server that is gone (connection refused). The
// first read retries, with one info line saying what, until the endpoint
// is declared down (one warning); then 100 reads fail at once, sending
// nothing, with an error naming the endpoint and the cause. When the
// server is back on the same port, reads succeed again without reopening
// the store, and one info line says so.
func TestHealthDeadEndpoint(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, nil)
	bucket := newBucket(t, fake.Endpoint)
	s3test.Put(t, fake.Endpoint, bucket, "t/a", []byte("0123456789abcdef"))
	s3test.Put(t, fake.Endpoint, bucket, "t/b", []byte("0123456789abcdef"))
	e := newHealthEnv(t, fake.Endpoint, bucket, nil)
	if _, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), 0); err != nil {
		t.Fatal(err)
	}
	fake.Stop()

	start := time.Now()
	_, err := e.st.ReadAt(ctxT(t), "b", make([]byte, 4), 0)
	el := time.Since(start)
	re := unreachableRE(bucket, fake.Endpoint, "connection refused")
	if err == nil || !re.MatchString(err.Error()) {
		t.Fatalf("read of a dead endpoint after %v = %v, want %s", el, err, re)
	}
	if errors.Is(err, storage.ErrNotExist) || !storage.IsTableWide(err) {
		t.Errorf("unreachable: ErrNotExist %v, table-wide %v", errors.Is(err, storage.ErrNotExist), storage.IsTableWide(err))
	}
	if el < 300*time.Millisecond || el > 10*time.Second {
		t.Errorf("the first read failed after %v: want DownAfter (300ms) or more, and no full retry budget", el)
	}
	t.Logf("first read: %v after %v", err, el.Round(time.Millisecond))

	gets := e.st.Stats().Gets
	start = time.Now()
	for i := range 100 {
		key := []string{"a", "b"}[i%2] // pinned or not: both fail at once
		if _, err := e.st.ReadAt(ctxT(t), key, make([]byte, 4), 0); err == nil || !re.MatchString(err.Error()) {
			t.Fatalf("read %d while down = %v", i, err)
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("100 reads while down took %v: they do not fail fast", el)
	}
	if n := e.st.Stats().Gets - gets; n != 0 {
		t.Errorf("%d GETs sent while the endpoint is down", n)
	}
	if _, err := e.st.List(ctxT(t), "", ""); err == nil || !re.MatchString(err.Error()) {
		t.Errorf("List while down = %v", err)
	}

	retrying, down := e.lines("INFO", msgRetrying), e.lines("WARN", msgDown)
	if len(retrying) != 1 || !strings.Contains(retrying[0], "op=GetObject key=b") || !strings.Contains(retrying[0], `cause="connection refused"`) {
		t.Errorf("want one info line saying what is retried, got %q", retrying)
	}
	if len(down) != 1 || !strings.Contains(down[0], "endpoint="+fake.Endpoint) || !strings.Contains(down[0], `cause="connection refused"`) {
		t.Errorf("want one warning declaring the endpoint down, got %q", down)
	}

	fake.Start(t)
	d := waitRead(t, e.st, "b", 10*time.Second)
	t.Logf("reads succeed %v after the server came back", d.Round(time.Millisecond))
	if up := e.lines("INFO", msgUp); len(up) != 1 || !strings.Contains(up[0], "down_for=") {
		t.Errorf("want one info line when the endpoint is back, got %q", up)
	}
	for i := range 20 {
		if _, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), int64(i%10)); err != nil {
			t.Fatalf("read after recovery: %v", err)
		}
	}
	if l := e.log.String(); strings.Contains(l, s3test.SecretKey) {
		t.Fatalf("the log holds the secret key:\n%s", l)
	}
}

// TestHealthSilentEndpoint: the network stops answering (Toxiproxy's
// timeout toxic: connections accepted, nothing comes back). An info line
// says what is being waited for before the first attempt times out; the
// endpoint is declared down once attempts kept timing out for DownAfter;
// reads then fail at once; when the network answers again, so do reads.
func TestHealthSilentEndpoint(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, nil)
	proxy := cloudtest.StartProxy(t, fake.Endpoint)
	bucket := newBucket(t, fake.Endpoint)
	s3test.Put(t, fake.Endpoint, bucket, "t/a", []byte("0123456789abcdef"))
	e := newHealthEnv(t, proxy.Endpoint, bucket, func(o *s3store.Options) {
		o.RequestTimeout = 400 * time.Millisecond
		o.SlowAnswer = 100 * time.Millisecond
		o.DownAfter = time.Second
	})
	proxy.AddToxic(t, "silent", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	silent := true
	defer func() {
		if silent {
			proxy.RemoveToxic(t, "silent")
		}
	}()

	start := time.Now()
	_, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), 0)
	el := time.Since(start)
	re := unreachableRE(bucket, proxy.Endpoint, "no answer within 400ms")
	if err == nil || !re.MatchString(err.Error()) {
		t.Fatalf("read of a silent endpoint after %v = %v, want %s", el, err, re)
	}
	if el > 10*time.Second {
		t.Errorf("failed after %v", el)
	}
	if slow := e.lines("INFO", msgSlow); len(slow) != 1 || !strings.Contains(slow[0], "op=GetObject key=a") || !strings.Contains(slow[0], "attempt_timeout=400ms") {
		t.Errorf("want one info line saying what waits for an answer, got %q", slow)
	}
	if down := e.lines("WARN", msgDown); len(down) != 1 {
		t.Errorf("want one warning declaring the endpoint down, got %q", down)
	}
	gets := e.st.Stats().Gets
	start = time.Now()
	for range 100 {
		if _, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), 0); err == nil || !re.MatchString(err.Error()) {
			t.Fatalf("read while down = %v", err)
		}
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("100 reads while down took %v", el)
	}
	if n := e.st.Stats().Gets - gets; n != 0 {
		t.Errorf("%d GETs sent while down", n)
	}

	proxy.RemoveToxic(t, "silent")
	silent = false
	d := waitRead(t, e.st, "a", 10*time.Second)
	t.Logf("reads succeed %v after the network came back", d.Round(time.Millisecond))
	if up := e.lines("INFO", msgUp); len(up) != 1 {
		t.Errorf("want one info line when the endpoint is back, got %q", up)
	}
}

// TestHealthAnswersAreUp: an endpoint that answers, even with errors, is
// never declared down: 403s and 404s are answers, and failures that
// alternate with answers (a flaky network) are not a dead endpoint.
func TestHealthAnswersAreUp(t *testing.T) {
	checkGoroutines(t)
	t.Run("denied and missing", func(t *testing.T) {
		deny, _ := s3test.ErrorFirst(-1, http.StatusForbidden, "AccessDenied", "Access Denied")
		fake := s3test.NewFake(t, deny)
		e := newHealthEnv(t, fake.Endpoint, "b", func(o *s3store.Options) { o.DownAfter = time.Millisecond })
		for range 5 {
			if _, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), 0); err == nil || !strings.Contains(err.Error(), "access denied") {
				t.Fatalf("read = %v, want access denied", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if down := e.lines("WARN", msgDown); len(down) != 0 {
			t.Errorf("declared down on 403s: %q", down)
		}
	})
	t.Run("every other connection dropped", func(t *testing.T) {
		// Two of three requests lose their connection before an answer.
		// Go's transport resends a GET once by itself when a reused
		// connection closes, so each read meets one failure, then an
		// answer: failures alternate with answers, never two in a row.
		var mu sync.Mutex
		seen, on := 0, false
		drop := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen++
				odd := on && seen%3 != 0
				mu.Unlock()
				if odd {
					panic(http.ErrAbortHandler) // closes the connection, no answer
				}
				next.ServeHTTP(w, r)
			})
		}
		fake := s3test.NewFake(t, drop)
		bucket := newBucket(t, fake.Endpoint)
		s3test.Put(t, fake.Endpoint, bucket, "t/a", make([]byte, 100000))
		e := newHealthEnv(t, fake.Endpoint, bucket, func(o *s3store.Options) { o.DownAfter = time.Nanosecond })
		mu.Lock()
		on = true
		mu.Unlock()
		for i := range 30 {
			if _, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 1000), int64(i*1000)); err != nil {
				t.Fatalf("read %d across dropped connections: %v", i, err)
			}
		}
		if down := e.lines("WARN", msgDown); len(down) != 0 {
			t.Errorf("declared down on an endpoint that answers every other request: %q", down)
		}
		if r := e.st.Stats().Retries; r < 25 {
			t.Errorf("%d retries: the drops did not apply", r)
		}
	})
}

// TestHealthNeverDown: a negative DownAfter keeps every request on its own
// retries, however long the endpoint stays dead.
func TestHealthNeverDown(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, nil)
	bucket := newBucket(t, fake.Endpoint)
	s3test.Put(t, fake.Endpoint, bucket, "t/a", []byte("0123456789"))
	e := newHealthEnv(t, fake.Endpoint, bucket, func(o *s3store.Options) { o.DownAfter = -1; o.MaxAttempts = 4 })
	fake.Stop()
	for range 5 {
		gets := e.st.Stats().Gets
		_, err := e.st.ReadAt(ctxT(t), "a", make([]byte, 4), 0)
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
			t.Fatalf("read = %v", err)
		}
		if n := e.st.Stats().Gets - gets; n != 4 {
			t.Fatalf("%d GETs, want 4", n)
		}
	}
	if down := e.lines("WARN", msgDown); len(down) != 0 {
		t.Errorf("declared down with DownAfter < 0: %q", down)
	}
}

// TestCloseCancelsInFlight: Close fails the requests waiting on a silent
// endpoint at once, with an error saying the store was closed, closes
// their connections, and later requests fail the same way without a
// request.
func TestCloseCancelsInFlight(t *testing.T) {
	checkGoroutines(t)
	silent := s3test.StartSilent(t)
	o := testOptions(silent.Endpoint)
	o.RequestTimeout = time.Minute
	o.Logger = slog.New(slog.DiscardHandler)
	st, err := s3store.New(context.Background(), "s3://b/t", o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n+2)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.ReadAt(context.Background(), fmt.Sprintf("k%d", i), make([]byte, 10), 0)
			errs <- err
		}()
		if i == n/2 { // a List and a Stat too
			wg.Add(2)
			go func() { defer wg.Done(); _, err := st.List(context.Background(), "_delta_log/", ""); errs <- err }()
			go func() { defer wg.Done(); _, err := st.Stat(context.Background(), "s"); errs <- err }()
		}
	}
	for deadline := time.Now().Add(30 * time.Second); st.Stats().InFlight < n+2; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests in flight", st.Stats().InFlight)
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	st.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("requests in flight still run 5 s after Close")
	}
	t.Logf("in-flight requests ended %v after Close", time.Since(start).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		if err == nil || !strings.Contains(err.Error(), "store was closed") {
			t.Errorf("in-flight request after Close = %v", err)
		}
		if errors.Is(err, context.Canceled) {
			t.Errorf("reads as the caller's cancellation: %v", err)
		}
	}
	if s := st.Stats(); s.InFlight != 0 {
		t.Errorf("%d requests still hold a slot", s.InFlight)
	}
	for deadline := time.Now().Add(5 * time.Second); silent.Accepted() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after Close", silent.Accepted())
		}
		time.Sleep(10 * time.Millisecond)
	}
	reqs := st.Stats().Requests()
	if _, err := st.ReadAt(context.Background(), "k", make([]byte, 1), 0); err == nil || !strings.Contains(err.Error(), "store was closed") {
		t.Errorf("read after Close = %v", err)
	}
	if st.Stats().Requests() != reqs {
		t.Error("a read after Close sent a request")
	}
	st.Close() // twice is fine
}

// TestHealthSuite: the breaker suite every cloud backend passes.
func TestHealthSuite(t *testing.T) {
	fake := s3test.NewFake(t, nil)
	s3test.CreateBucket(t, fake.Endpoint, "health")
	n := 0
	storagetest.RunHealth(t, storagetest.HealthCloud{
		Name:   "s3",
		Server: fake.Endpoint,
		Open: func(t *testing.T, base string, tune remote.Tuning) storagetest.HealthStore {
			n++
			o := testOptions(base)
			o.Tuning = tune
			return open(t, fmt.Sprintf("s3://health/t%d", n), o)
		},
		Secrets: []string{s3test.SecretKey},
	})
}
