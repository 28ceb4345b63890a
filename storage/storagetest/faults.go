package storagetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/remote"
)

// The fault suite (RunFaults): one object store backend against its
// emulator behind an in-process Toxiproxy and fault middleware, read while
// the network or the server misbehaves: latency, connections reset, bodies
// cut or stalled mid-way, answers that never come, a server restarted
// between attempts, throttling and server errors. A read returns the true
// bytes once the fault clears, or, when it stays, fails in bounded time
// with one line saying why after the configured attempts; it never
// returns short or wrong bytes. No goroutine is left behind.

// FaultStore is what the suite reads through: a backend's Store.
type FaultStore interface {
	storage.Storage
	storage.RangeReader
	Stats() remote.Stats
}

// FaultTuning are the retry settings the suite gives a store.
type FaultTuning struct {
	MaxAttempts    int
	MaxBackoff     time.Duration
	RequestTimeout time.Duration
	// DownAfter and ProbeInterval tune the endpoint's breaker
	// (remote.Tuning); zero: the store's defaults.
	DownAfter, ProbeInterval time.Duration
}

// FaultBackend describes a backend for RunFaults.
type FaultBackend struct {
	// Start starts the backend's emulator on a loopback address, its
	// handler wrapped by wrap (never nil), with an empty table; t.Cleanup
	// stops it.
	Start func(t *testing.T, wrap func(http.Handler) http.Handler) FaultServer
	// Answers are the cloud's throttling and server-error answers, each
	// retried with backoff and, kept, reported as such.
	Answers []FaultAnswer
	// Classify reports whether err is the backend's own error, with the
	// attempts it made and whether it is marked permanent.
	Classify func(err error) (ok bool, attempts int, permanent bool)
	// ResumesBodies: a body cut short or stalled mid-way is reopened at
	// the byte it stopped (GCS: Google's SDK), not fetched again; a body
	// that keeps coming in pieces is read whole. Otherwise such a body is a
	// failed attempt, fetched again from its start.
	ResumesBodies bool
}

// FaultServer is a running emulator (see FaultBackend.Start).
type FaultServer struct {
	Addr  string             // 127.0.0.1:port, where the proxy forwards to
	Stop  func()             // stops the server
	Start func(t testing.TB) // brings it back with its objects
	// Put stores an object of the table (key relative to the table),
	// straight to the server.
	Put func(t *testing.T, key string, data []byte)
	// Open opens a store on the table, reaching the server through
	// endpoint (http://127.0.0.1:port, a proxy in front of Addr) with the
	// tuning's retries; t.Cleanup closes it.
	Open func(t *testing.T, endpoint string, tune FaultTuning) FaultStore
}

// FaultAnswer is one error answer of a cloud.
type FaultAnswer struct {
	Name   string           // subtest name: the cloud's error code
	Answer http.HandlerFunc // writes the answer
	Reason string           // what a store says when it stays ("the server is throttling requests")
	Code   string           // what else the error names (the code), or ""
	// HeadReason is what Stat (a HEAD, whose answer has no body) says
	// when it stays, if not Reason: S3 sends its code in the body only.
	HeadReason string
}

// RunFaults runs the fault suite as subtests of t.
func RunFaults(t *testing.T, b FaultBackend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, FaultBackend)
	}{
		{"Latency", faultLatency},
		{"ResetPeer", faultResetPeer},
		{"CutBody", faultCutBody},
		{"Stall", faultStall},
		{"StallMidBody", faultStallMidBody},
		{"ServerRestart", faultServerRestart},
		{"EndpointDown", faultEndpointDown},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
	for _, a := range b.Answers {
		t.Run("Throttle/"+a.Name, func(t *testing.T) { faultThrottle(t, b, a) })
	}
}

// faultEnv is a backend's emulator behind Toxiproxy and the fault
// middleware, with one object of 1 MiB, and a store reading through the
// proxy with fast retries.
type faultEnv struct {
	srv   FaultServer
	proxy *cloudtest.Proxy
	errs  *cloudtest.ErrorSwitch
	stall *cloudtest.Staller
	st    FaultStore
	data  []byte
}

const faultKey = "part-00000.parquet"

// faultTuning is the suite's default: 20 attempts of up to 2 s, 100 ms
// backoff at the most.
var faultTuning = FaultTuning{MaxAttempts: 20, MaxBackoff: 100 * time.Millisecond, RequestTimeout: 2 * time.Second}

func newFaultEnv(t *testing.T, b FaultBackend, answer http.HandlerFunc, tune func(*FaultTuning)) *faultEnv {
	t.Helper()
	cloudtest.CheckGoroutines(t) // first: checked after every other cleanup
	e := &faultEnv{errs: &cloudtest.ErrorSwitch{Answer: answer}, stall: &cloudtest.Staller{After: 100000}, data: randBytes(42, 1<<20)}
	e.srv = b.Start(t, func(h http.Handler) http.Handler { return e.errs.Wrap(e.stall.Wrap(h)) })
	e.srv.Put(t, faultKey, e.data)
	e.proxy = cloudtest.StartProxy(t, "http://"+e.srv.Addr)
	tn := faultTuning
	if tune != nil {
		tune(&tn)
	}
	e.st = e.srv.Open(t, e.proxy.Endpoint, tn)
	return e
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
			heal()
			<-done
			t.Fatal("the read made no attempts")
		}
	}
	heal()
	return <-done
}

// oneLine fails t unless err is one line.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error of more than one line: %q", err)
	}
}

// faultLatency: reads under latency return the right bytes without a
// retry; ReadRanges still coalesces neighbours (three ranges, two close
// together, in two GETs).
func faultLatency(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, nil)
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
	gets0 := e.st.Stats().Gets
	ranges := []storage.Range{{Off: 0, Len: 100}, {Off: 30000, Len: 1000}, {Off: 1<<20 - 100, Len: 100}}
	got, err := e.st.ReadRanges(ctx, faultKey, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, rg := range ranges {
		if !bytes.Equal(got[i], e.data[rg.Off:rg.Off+rg.Len]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
	}
	if s := e.st.Stats(); s.Gets-gets0 != 2 || s.RangesCoalesced != 1 || s.Retries != 0 {
		t.Errorf("ReadRanges: %d GETs, %d coalesced, %d retries; want 2, 1, 0", s.Gets-gets0, s.RangesCoalesced, s.Retries)
	}
}

// faultResetPeer: connections reset when the answer starts are retried
// and the read returns the right bytes; kept, the read fails after
// MaxAttempts attempts with one line, an error that is not permanent and
// not "does not exist".
func faultResetPeer(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, nil)
	if err := e.read(ctxT(t), 0, 10); err != nil { // pin, warm a connection
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
	if err := e.readDuringFault(t, 1000, 300000, 3, func() { e.proxy.RemoveToxic(t, "reset") }); err != nil {
		t.Fatalf("read across resets: %v", err)
	}
	if s := e.st.Stats(); s.Retries < 2 {
		t.Errorf("Retries = %d, want >= 2", s.Retries)
	}
	e.proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
	gets0 := e.st.Stats().Gets
	err := e.read(ctxT(t), 0, 1000)
	if err == nil {
		t.Fatal("read under a kept reset succeeded")
	}
	ok, _, permanent := b.Classify(err)
	if !ok || permanent || errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "gave up after 20 attempts") {
		t.Fatalf("read under a kept reset = %v (the store's error: %v, permanent: %v)", err, ok, permanent)
	}
	oneLine(t, err)
	if n := e.st.Stats().Gets - gets0; n != 20 {
		t.Errorf("%d attempts, want 20", n)
	}
	t.Logf("%v", err)
}

// faultCutBody: a connection cut in the middle of a body is never a
// short read: it is a failed attempt (retried, fetched again) and, kept,
// the error says the body was cut short; or, for a backend that resumes
// bodies, the rest is fetched from where it stopped.
func faultCutBody(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, func(o *FaultTuning) { o.MaxAttempts = 6 })
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	// Every connection ends after 50 kB: headers and a part of the body.
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	b0 := e.st.Stats().BytesFetched
	if err := e.readDuringFault(t, 0, 1<<20, 3, func() { e.proxy.RemoveToxic(t, "cut") }); err != nil {
		t.Fatalf("read across cut bodies: %v", err)
	}
	s := e.st.Stats()
	switch {
	case b.ResumesBodies && s.BytesFetched-b0 != 1<<20:
		t.Errorf("BytesFetched +%d: a resumed body fetched again", s.BytesFetched-b0)
	case !b.ResumesBodies && (s.BytesFetched-b0 <= 1<<20 || s.Retries < 2):
		t.Errorf("BytesFetched +%d, Retries %d: expected partial bodies and retries", s.BytesFetched-b0, s.Retries)
	}
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	err := e.read(ctxT(t), 0, 1<<20)
	if b.ResumesBodies {
		// Each piece moves the read on: it ends, with the true bytes.
		if err != nil {
			t.Fatalf("read with every body cut, resumed: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "gave up after 6 attempts") {
		t.Fatalf("read with every body cut = %v", err)
	}
	oneLine(t, err)
	t.Logf("%v", err)
}

// stallTuning: attempts of 300 ms, 4 of them, 50 ms backoff at the most.
func stallTuning(o *FaultTuning) {
	o.RequestTimeout = 300 * time.Millisecond
	o.MaxAttempts = 4
	o.MaxBackoff = 50 * time.Millisecond
}

// faultStall: a server that accepts the request but never answers
// (timeout toxic) trips the per-attempt timeout; the read is retried and
// completes once the fault is gone, and fails in bounded time, as a
// timeout that is not the caller's, if it stays.
func faultStall(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, stallTuning)
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	start := time.Now()
	if err := e.readDuringFault(t, 100, 1000, 2, func() { e.proxy.RemoveToxic(t, "stall") }); err != nil {
		t.Fatalf("read after a stall: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("read took %v: no attempt timed out", el)
	}
	// Kept: 4 attempts × 300 ms + backoff, then a timeout error.
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	start = time.Now()
	err := e.read(ctxT(t), 0, 1000)
	el := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("read under a kept stall = %v", err)
	}
	oneLine(t, err)
	// The caller's context did not expire: the error must not say it did
	// (the mount would answer EINTR, "interrupted", instead of EIO).
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a store timeout matches a context error: %v", err)
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a store timeout is not a timeout error: %v", err)
	}
	if el < 4*300*time.Millisecond || el > 4*300*time.Millisecond+3*time.Second {
		t.Errorf("read under a kept stall failed after %v, want about 1.2 s", el)
	}
	t.Logf("%v after %v", err, el.Round(time.Millisecond))
}

// faultStallMidBody: a response that stops in the middle of its body
// trips the per-attempt timeout too (it covers reading the body); the read
// is retried and completes once the fault is gone; kept, the error says
// how much of the body came, or, for a backend that resumes bodies, each
// attempt moves the read on and it completes.
func faultStallMidBody(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, stallTuning)
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.stall.Set(true)
	b0 := e.st.Stats().BytesFetched
	if err := e.readDuringFault(t, 0, 1<<20, 2, func() { e.stall.Set(false) }); err != nil {
		t.Fatalf("read after a stalled body: %v", err)
	}
	got := e.st.Stats().BytesFetched - b0
	switch {
	case b.ResumesBodies && got != 1<<20:
		t.Errorf("fetched %d bytes: a resumed body fetched again", got)
	case !b.ResumesBodies && got < 1<<20+100000:
		t.Errorf("fetched %d bytes: no partial body before the good one", got)
	}
	e.stall.Set(true)
	defer e.stall.Set(false)
	start := time.Now()
	err := e.read(ctxT(t), 0, 1<<20)
	if b.ResumesBodies {
		if err != nil {
			t.Fatalf("read with every body stalled, resumed: %v", err)
		}
		if n := e.stall.Stalled(); n < 3 {
			t.Errorf("%d stalled answers: the stall did not apply", n)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "gave up after 4 attempts") || !strings.Contains(err.Error(), "100000 of 1048576 bytes") {
		t.Fatalf("read under a kept stall = %v", err)
	}
	oneLine(t, err)
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
}

// faultServerRestart: the server goes away in the middle of a sequence of
// reads and comes back; the reads resume (the one in flight is retried
// until the server is back: up to 1 s apart, as a restart takes a while).
// Down for good, a read fails after its attempts.
func faultServerRestart(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, func(o *FaultTuning) { o.MaxBackoff = time.Second })
	ctx := ctxT(t)
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 30; i++ {
		off, n := r.Int63n(1<<20), r.Int63n(50000)+1
		var err error
		if i == 10 {
			e.srv.Stop()
			err = e.readDuringFault(t, off, n, 3, func() { e.srv.Start(t) })
		} else {
			err = e.read(ctx, off, n)
		}
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if s := e.st.Stats(); s.Retries < 2 {
		t.Errorf("Retries = %d, want >= 2", s.Retries)
	}
	// Down for good (a store with 100 ms backoff, to fail sooner).
	st := e.srv.Open(t, e.proxy.Endpoint, faultTuning)
	e.srv.Stop()
	defer e.srv.Start(t)
	_, err := st.ReadAt(ctx, faultKey, make([]byte, 10), 0)
	if err == nil || !strings.Contains(err.Error(), "gave up after 20 attempts") {
		t.Fatalf("read with the server gone = %v", err)
	}
	oneLine(t, err)
	t.Logf("%v", err)
}

// faultThrottle: an error answer is retried with backoff for every
// operation (GETs, which the backends retry themselves, and the others,
// retried by the SDKs); kept, the error says why after MaxAttempts.
func faultThrottle(t *testing.T, b FaultBackend, a FaultAnswer) {
	e := newFaultEnv(t, b, a.Answer, func(o *FaultTuning) { o.MaxAttempts = 5; o.MaxBackoff = 20 * time.Millisecond })
	e.srv.Put(t, "other", []byte("other"))
	ctx := ctxT(t)

	e.errs.Set(3)
	if _, err := e.st.Stat(ctx, faultKey); err != nil {
		t.Fatalf("Stat after 3 error answers: %v", err)
	}
	e.errs.Set(3)
	if err := e.read(ctx, 0, 1000); err != nil {
		t.Fatalf("GET after 3 error answers: %v", err)
	}
	e.errs.Set(3)
	if _, err := e.st.List(ctx, "", ""); err != nil {
		t.Fatalf("List after 3 error answers: %v", err)
	}
	e.errs.Set(2)
	if err := e.st.Put(ctx, "x", []byte("x"), false); err != nil {
		t.Fatalf("Put after 2 error answers: %v", err)
	}
	if s := e.st.Stats(); s.Retries != 11 {
		t.Errorf("Retries = %d, want 11", s.Retries)
	}

	check := func(op string, err error, reason, code string) {
		t.Helper()
		want := reason + "; gave up after 5 attempts"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), code) {
			t.Fatalf("%s under endless %s = %v, want %q and %q", op, a.Name, err, want, code)
		}
		oneLine(t, err)
		if n := e.errs.Hits(); n != 5 {
			t.Errorf("%s under endless %s: %d requests, want 5", op, a.Name, n)
		}
	}
	e.errs.Set(-1)
	start := time.Now()
	err := e.read(ctx, 0, 1000)
	if ok, attempts, _ := b.Classify(err); !ok || attempts != 5 {
		t.Errorf("GET under endless %s = %v: the store's error %v, %d attempts, want 5", a.Name, err, ok, attempts)
	}
	check("GET", err, a.Reason, a.Code)
	t.Logf("%v (%v)", err, time.Since(start).Round(time.Millisecond))
	e.errs.Set(-1)
	_, err = e.st.List(ctx, "", "")
	check("List", err, a.Reason, a.Code)
	e.errs.Set(-1)
	_, err = e.st.Stat(ctx, "other")
	if a.HeadReason != "" {
		check("Stat", err, a.HeadReason, "")
	} else {
		check("Stat", err, a.Reason, a.Code)
	}
	e.errs.Set(0)
}

// faultEndpointDown: the breaker every cloud's store has (remote's
// health): a server that stops answering is declared down after
// DownAfter, reads then fail at once with remote.Unreachable and send
// nothing, and when it is back a probe finds it and reads resume with the
// true bytes, in the same store.
func faultEndpointDown(t *testing.T, b FaultBackend) {
	e := newFaultEnv(t, b, nil, func(o *FaultTuning) {
		o.MaxAttempts, o.MaxBackoff, o.RequestTimeout = 50, 50*time.Millisecond, time.Second
		o.DownAfter, o.ProbeInterval = 300*time.Millisecond, 200*time.Millisecond
	})
	ctx := ctxT(t)
	if err := e.read(ctx, 0, 4096); err != nil {
		t.Fatal(err)
	}
	e.srv.Stop()
	restarted := false
	defer func() {
		if !restarted {
			e.srv.Start(t)
		}
	}()
	var down *remote.Unreachable
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := e.read(ctx, 0, 4096)
		if errors.As(err, &down) {
			oneLine(t, err)
			break
		}
		if err == nil {
			t.Fatal("a read succeeded with the server stopped")
		}
		if time.Now().After(deadline) {
			t.Fatalf("not declared down 30 s after the server stopped: %v", err)
		}
	}
	sent := func() int64 { s := e.st.Stats(); return s.Gets + s.Heads + s.Lists + s.Other }
	before, start := sent(), time.Now()
	for range 5 {
		if err := e.read(ctx, 100, 10); !errors.As(err, &down) {
			t.Fatalf("a read while down: %v, want remote.Unreachable", err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("5 reads while down took %v: they must fail at once", d)
	}
	// The probe may have sent one request meanwhile; reads send none.
	if n := sent() - before; n > 2 {
		t.Errorf("%d requests sent by 5 reads while down", n)
	}
	e.srv.Start(t)
	restarted = true
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := e.read(ctx, 0, 1<<20)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reads did not resume 15 s after the server came back: %v", err)
		}
	}
}
