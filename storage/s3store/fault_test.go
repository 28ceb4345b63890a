package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/deltafs/deltafs/internal/s3test"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/s3store"
)

// faultEnv is gofakes3 behind an in-process Toxiproxy, with one object of
// 1 MiB, and a store reading through the proxy with fast retries.
type faultEnv struct {
	fake  *s3test.Fake
	proxy *cloudtest.Proxy
	st    *s3store.Store
	data  []byte
}

const faultKey = "part-00000.parquet"

func newFaultEnv(t *testing.T, wrap func(http.Handler) http.Handler, tune func(*s3store.Options)) *faultEnv {
	t.Helper()
	fake := s3test.NewFake(t, wrap)
	proxy := cloudtest.StartProxy(t, fake.Endpoint)
	bucket := newBucket(t, fake.Endpoint)
	data := randBytes(42, 1<<20)
	s3test.Put(t, fake.Endpoint, bucket, "t/"+faultKey, data)
	o := testOptions(proxy.Endpoint)
	o.MaxAttempts = 20
	o.MaxBackoff = 100 * time.Millisecond
	o.RequestTimeout = 2 * time.Second
	if tune != nil {
		tune(&o)
	}
	return &faultEnv{fake: fake, proxy: proxy, st: open(t, "s3://"+bucket+"/t", o), data: data}
}

// read reads n bytes at off and checks them.
func (e *faultEnv) read(ctx context.Context, off, n int64) error {
	p := make([]byte, n)
	got, err := e.st.ReadAt(ctx, faultKey, p, off)
	if err != nil && !(err == io.EOF && off+int64(got) == int64(len(e.data))) {
		return err
	}
	if !bytes.Equal(p[:got], e.data[off:off+int64(got)]) {
		return errors.New("wrong bytes")
	}
	return nil
}

// readDuringFault starts a read, waits until at least `failed` GET
// attempts were made during the fault, calls heal, and returns the read's
// result.
func (e *faultEnv) readDuringFault(t *testing.T, off, n int64, failed int64, heal func()) error {
	t.Helper()
	gets0 := e.st.Stats().Gets
	done := make(chan error, 1)
	go func() { done <- e.read(ctxT(t), off, n) }()
	deadline := time.Now().Add(30 * time.Second)
	for e.st.Stats().Gets < gets0+failed {
		select {
		case err := <-done:
			t.Fatalf("read ended during the fault after %d attempts: %v", e.st.Stats().Gets-gets0, err)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the read made no attempts")
		}
	}
	heal()
	return <-done
}

func TestFaultLatency(t *testing.T) {
	checkGoroutines(t)
	e := newFaultEnv(t, nil, nil)
	e.proxy.AddToxic(t, "lat", "latency", "downstream", 1, map[string]any{"latency": 40, "jitter": 10})
	ctx := ctxT(t)
	r := rand.New(rand.NewSource(1))
	start := time.Now()
	for i := 0; i < 10; i++ {
		if err := e.read(ctx, r.Int63n(1<<20), r.Int63n(100000)+1); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 10*30*time.Millisecond {
		t.Errorf("10 reads took %v: the latency toxic did not apply", el)
	}
	ranges := []s3store.Range{{Off: 0, Len: 100}, {Off: 500000, Len: 1000}, {Off: 1<<20 - 100, Len: 100}}
	got, err := e.st.ReadRanges(ctx, faultKey, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, rg := range ranges {
		if !bytes.Equal(got[i], e.data[rg.Off:rg.Off+rg.Len]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
	}
	if s := e.st.Stats(); s.Retries != 0 {
		t.Errorf("%d retries under plain latency", s.Retries)
	}
}

// TestFaultResetPeer: connections reset when the answer starts are retried
// and the read returns the right bytes.
func TestFaultResetPeer(t *testing.T) {
	checkGoroutines(t)
	e := newFaultEnv(t, nil, nil)
	if err := e.read(ctxT(t), 0, 10); err != nil { // pin, warm a connection
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
	err := e.readDuringFault(t, 1000, 300000, 3, func() { e.proxy.RemoveToxic(t, "reset") })
	if err != nil {
		t.Fatalf("read across resets: %v", err)
	}
	s := e.st.Stats()
	t.Logf("stats: %+v", s)
	if s.Retries < 2 {
		t.Errorf("Retries = %d, want >= 2", s.Retries)
	}
	// Kept: the read fails after MaxAttempts with an I/O error.
	e.proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
	gets0 := e.st.Stats().Gets
	err = e.read(ctxT(t), 0, 1000)
	var se *s3store.Error
	if err == nil || !errors.As(err, &se) || se.Permanent || errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "gave up after 20 attempts") {
		t.Fatalf("read under a kept reset = %v", err)
	}
	if n := e.st.Stats().Gets - gets0; n != 20 {
		t.Errorf("%d attempts, want 20", n)
	}
	t.Logf("%v", err)
}

// TestFaultCutBody: a connection cut in the middle of a body is a failed
// attempt (retried), never a short read.
func TestFaultCutBody(t *testing.T) {
	checkGoroutines(t)
	e := newFaultEnv(t, nil, func(o *s3store.Options) { o.MaxAttempts = 6 })
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	// Every connection ends after 50 kB: headers and a part of the body.
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	b0 := e.st.Stats().BytesFetched
	err := e.readDuringFault(t, 0, 1<<20, 3, func() { e.proxy.RemoveToxic(t, "cut") })
	if err != nil {
		t.Fatalf("read across cut bodies: %v", err)
	}
	if s := e.st.Stats(); s.BytesFetched-b0 <= 1<<20 || s.Retries < 2 {
		t.Errorf("BytesFetched +%d, Retries %d: expected partial bodies and retries", s.BytesFetched-b0, s.Retries)
	}
	// Kept: fails, saying the body was cut short.
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	err = e.read(ctxT(t), 0, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "gave up after 6 attempts") {
		t.Fatalf("read with every body cut = %v", err)
	}
	t.Logf("%v", err)
}

// TestFaultStall: a server that accepts the request but never answers
// (timeout toxic) trips the per-attempt timeout; the read is retried and
// completes once the fault is gone, and fails in bounded time if it stays.
func TestFaultStall(t *testing.T) {
	checkGoroutines(t)
	e := newFaultEnv(t, nil, func(o *s3store.Options) {
		o.RequestTimeout = 300 * time.Millisecond
		o.MaxAttempts = 4
		o.MaxBackoff = 50 * time.Millisecond
	})
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	start := time.Now()
	err := e.readDuringFault(t, 100, 1000, 2, func() { e.proxy.RemoveToxic(t, "stall") })
	if err != nil {
		t.Fatalf("read after a stall: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("read took %v: no attempt timed out", el)
	}
	// Kept: 4 attempts × 300 ms + backoff, then a timeout error.
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	start = time.Now()
	err = e.read(ctxT(t), 0, 1000)
	el := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("read under a kept stall = %v", err)
	}
	// The caller's context did not expire: the error must not say it did
	// (the mount would answer EINTR, "interrupted", instead of EIO).
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a store timeout matches a context error: %v", err)
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a store timeout is not a timeout error: %v", err)
	}
	if el < 4*300*time.Millisecond || el > 4*300*time.Millisecond+2*time.Second {
		t.Errorf("read under a kept stall failed after %v, want about 1.2 s", el)
	}
	t.Logf("%v after %v", err, el.Round(time.Millisecond))
}

// TestFaultStallMidBody: a response that stops in the middle of its body
// trips the per-attempt timeout too (it covers reading the body); the read
// is retried and completes once the fault is gone.
func TestFaultStallMidBody(t *testing.T) {
	checkGoroutines(t)
	stall := &s3test.Staller{After: 100000}
	e := newFaultEnv(t, stall.Wrap, func(o *s3store.Options) {
		o.RequestTimeout = 300 * time.Millisecond
		o.MaxAttempts = 4
		o.MaxBackoff = 50 * time.Millisecond
	})
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	stall.Set(true)
	b0 := e.st.Stats().BytesFetched
	err := e.readDuringFault(t, 0, 1<<20, 2, func() { stall.Set(false) })
	if err != nil {
		t.Fatalf("read after a stalled body: %v", err)
	}
	if got := e.st.Stats().BytesFetched - b0; got < 1<<20+100000 {
		t.Errorf("fetched %d bytes: no partial body before the good one", got)
	}
	stall.Set(true)
	start := time.Now()
	err = e.read(ctxT(t), 0, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "request timed out") || !strings.Contains(err.Error(), "gave up after 4 attempts") || !strings.Contains(err.Error(), "100000 of 1048576 bytes") {
		t.Fatalf("read under a kept stall = %v", err)
	}
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
}

// TestFaultServerRestart: the server goes away in the middle of a sequence
// of reads and comes back; the reads resume (the one in flight is retried
// until the server is back).
func TestFaultServerRestart(t *testing.T) {
	checkGoroutines(t)
	e := newFaultEnv(t, nil, nil)
	ctx := ctxT(t)
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 30; i++ {
		off, n := r.Int63n(1<<20), r.Int63n(50000)+1
		var err error
		if i == 10 {
			e.fake.Stop()
			err = e.readDuringFault(t, off, n, 3, func() { e.fake.Start(t) })
		} else {
			err = e.read(ctx, off, n)
		}
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if s := e.st.Stats(); s.Retries < 2 {
		t.Errorf("Retries = %d", s.Retries)
	}
	// Down for good: the error says the endpoint cannot be reached.
	e.fake.Stop()
	err := e.read(ctx, 0, 10)
	if err == nil || !strings.Contains(err.Error(), "gave up after 20 attempts") {
		t.Fatalf("read with the server gone = %v", err)
	}
	t.Logf("%v", err)
	e.fake.Start(t)
}

// TestFaultThrottle: 503 SlowDown and 429 are retried with backoff, for
// GETs (retried here) and for the other operations (retried by the SDK);
// throttling that never ends fails with a clear error.
func TestFaultThrottle(t *testing.T) {
	checkGoroutines(t)
	for _, c := range []struct {
		name   string
		status int
		code   string
		msg    string
	}{
		{"SlowDown", http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate."},
		{"TooManyRequests", http.StatusTooManyRequests, "TooManyRequests", "Too many requests."},
		{"InternalError", http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."},
	} {
		t.Run(c.name, func(t *testing.T) {
			var on sync.Mutex
			throttleN := int64(0) // requests still to throttle; -1 all
			count := int64(0)
			wrap := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					on.Lock()
					hit := throttleN != 0
					if throttleN > 0 {
						throttleN--
					}
					if hit {
						count++
					}
					on.Unlock()
					if hit {
						s3test.WriteError(w, r, c.status, c.code, c.msg)
						return
					}
					h.ServeHTTP(w, r)
				})
			}
			e := newFaultEnv(t, wrap, func(o *s3store.Options) { o.MaxAttempts = 5; o.MaxBackoff = 20 * time.Millisecond })
			set := func(n int64) { on.Lock(); throttleN, count = n, 0; on.Unlock() }
			ctx := ctxT(t)

			set(3)
			if err := e.read(ctx, 0, 1000); err != nil {
				t.Fatalf("GET after 3 throttled attempts: %v", err)
			}
			set(3)
			if _, err := e.st.List(ctx, "", ""); err != nil {
				t.Fatalf("List after 3 throttled attempts: %v", err)
			}
			set(2)
			if err := e.st.Put(ctx, "x", []byte("x"), false); err != nil {
				t.Fatalf("Put after 2 throttled attempts: %v", err)
			}
			if s := e.st.Stats(); s.Retries != 8 {
				t.Errorf("Retries = %d, want 8", s.Retries)
			}

			set(-1)
			start := time.Now()
			err := e.read(ctx, 0, 1000)
			var se *s3store.Error
			if err == nil || !errors.As(err, &se) || se.Attempts != 5 || count != 5 {
				t.Fatalf("GET under endless %s = %v (%d requests)", c.code, err, count)
			}
			want := "the server is throttling requests; gave up after 5 attempts"
			if c.status == 500 {
				want = "server error; gave up after 5 attempts"
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.code) {
				t.Errorf("error %q does not say %q and %s", err, want, c.code)
			}
			t.Logf("%v (%v)", err, time.Since(start).Round(time.Millisecond))
			set(-1)
			if _, err := e.st.List(ctx, "", ""); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("List under endless %s = %v", c.code, err)
			}
			set(0)
		})
	}
}
