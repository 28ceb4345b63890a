package azstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/deltafs/deltafs/internal/aztest"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/azstore"
)

// faultEnv is Azurite behind an in-process Toxiproxy, with one blob of
// 1 MiB, and a store reading through the proxy with fast retries.
type faultEnv struct {
	srv   *aztest.Server
	proxy *cloudtest.Proxy
	st    *azstore.Store
	data  []byte
}

const faultKey = "part-00000.parquet"

func newFaultEnv(t *testing.T, srvOpts aztest.Options, tune func(*azstore.Options)) *faultEnv {
	t.Helper()
	srv := aztest.Start(t, srvOpts)
	c := newContainer(t, srv.Endpoint, false)
	data := make([]byte, 1<<20)
	rand.New(rand.NewSource(42)).Read(data)
	aztest.Put(t, srv.Endpoint, c, "t/"+faultKey, data)
	proxy := cloudtest.StartProxy(t, "127.0.0.1:"+strconv.Itoa(srv.Port))
	useConnString(t, proxy.Endpoint+"/"+aztest.Account)
	o := testOptions()
	o.MaxAttempts = 20
	o.MaxBackoff = 100 * time.Millisecond
	o.RequestTimeout = 2 * time.Second
	if tune != nil {
		tune(&o)
	}
	return &faultEnv{srv: srv, proxy: proxy, st: open(t, "az://"+c+"/t", o), data: data}
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
	e := newFaultEnv(t, aztest.Options{}, nil)
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
	// Coalescing: three ranges, two close together, in two GETs.
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

// TestFaultResetPeer: connections reset when the answer starts are retried
// and the read returns the right bytes; kept, the read fails after
// MaxAttempts with one line.
func TestFaultResetPeer(t *testing.T) {
	e := newFaultEnv(t, aztest.Options{}, nil)
	if err := e.read(ctxT(t), 0, 10); err != nil {
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
	var ae *azstore.Error
	if err == nil || !errors.As(err, &ae) || ae.Permanent || errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "gave up after 20 attempts") || strings.Contains(err.Error(), "\n") {
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
	e := newFaultEnv(t, aztest.Options{}, func(o *azstore.Options) { o.MaxAttempts = 6 })
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	b0 := e.st.Stats().BytesFetched
	if err := e.readDuringFault(t, 0, 1<<20, 3, func() { e.proxy.RemoveToxic(t, "cut") }); err != nil {
		t.Fatalf("read across cut bodies: %v", err)
	}
	if s := e.st.Stats(); s.BytesFetched-b0 <= 1<<20 || s.Retries < 2 {
		t.Errorf("BytesFetched +%d, Retries %d: expected partial bodies and retries", s.BytesFetched-b0, s.Retries)
	}
	e.proxy.AddToxic(t, "cut", "limit_data", "downstream", 1, map[string]any{"bytes": 50000})
	err := e.read(ctxT(t), 0, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "gave up after 6 attempts") {
		t.Fatalf("read with every body cut = %v", err)
	}
	t.Logf("%v", err)
}

// TestFaultStall: an endpoint that takes the request and never answers
// trips the per-attempt timeout; the read is retried, completes once the
// fault is gone, and fails in bounded time if it stays.
func TestFaultStall(t *testing.T) {
	e := newFaultEnv(t, aztest.Options{}, func(o *azstore.Options) {
		o.RequestTimeout = 300 * time.Millisecond
		o.MaxAttempts = 4
		o.MaxBackoff = 50 * time.Millisecond
	})
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	if err := e.readDuringFault(t, 100, 1000, 2, func() { e.proxy.RemoveToxic(t, "stall") }); err != nil {
		t.Fatalf("read after a stall: %v", err)
	}
	e.proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	start := time.Now()
	err := e.read(ctxT(t), 0, 1000)
	el := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("read under a kept stall = %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a store timeout reads as the caller's deadline: %v", err)
	}
	if el > 10*time.Second {
		t.Errorf("kept stall failed after %v, want about 4 × 300 ms", el)
	}
	t.Logf("%v after %v", err, el.Round(time.Millisecond))
}

// TestFaultThrottling: 503 ServerBusy answers are retried with backoff
// (for GETs, which this package retries, and for the SDK's operations:
// properties, lists); kept, the error says the service throttles.
func TestFaultThrottling(t *testing.T) {
	srv := aztest.Start(t, aztest.Options{})
	c := newContainer(t, srv.Endpoint, false)
	aztest.Put(t, srv.Endpoint, c, "t/a", []byte("hello"))
	o := testOptions()
	o.MaxAttempts = 4
	ctx := ctxT(t)
	b := make([]byte, 5)
	for _, op := range []struct {
		name string
		do   func(st *azstore.Store) error
	}{
		{"List", func(st *azstore.Store) error {
			infos, err := st.List(ctx, "", "")
			if err == nil && len(infos) != 1 {
				err = errors.New("wrong listing")
			}
			return err
		}},
		{"ReadAt", func(st *azstore.Store) error {
			_, err := st.ReadAt(ctx, "a", b, 0)
			if err == nil && string(b) != "hello" {
				err = errors.New("wrong bytes")
			}
			return err
		}},
		{"Stat", func(st *azstore.Store) error { _, err := st.Stat(ctx, "a"); return err }},
	} {
		// Three throttled answers, then served: within 4 attempts.
		p := aztest.StartErrorProxy(t, srv.Endpoint, 3, http.StatusServiceUnavailable, "ServerBusy")
		useConnString(t, p.Endpoint)
		st := open(t, "az://"+c+"/t", o)
		if err := op.do(st); err != nil {
			t.Fatalf("%s under throttling: %v", op.name, err)
		}
		if n, s := p.Answered.Load(), st.Stats(); n != 3 || s.Retries != 3 {
			t.Errorf("%s: %d requests throttled, %d retries; want 3, 3", op.name, n, s.Retries)
		}
	}
	kept := aztest.StartErrorProxy(t, srv.Endpoint, -1, http.StatusServiceUnavailable, "ServerBusy")
	useConnString(t, kept.Endpoint)
	st2 := open(t, "az://"+c+"/t", o)
	_, err := st2.ReadAt(ctx, "a", b, 0)
	if err == nil || !strings.Contains(err.Error(), "throttling requests; gave up after 4 attempts") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("ReadAt under kept throttling = %v", err)
	}
	_, err = st2.Stat(ctx, "a")
	if err == nil || !strings.Contains(err.Error(), "throttling requests; gave up after 4 attempts") {
		t.Fatalf("Stat under kept throttling = %v", err)
	}
	t.Logf("%v", err)
}

// TestFaultRestart: Azurite stopped and started again (its data on disk)
// while reads are retried: they complete with the right bytes.
func TestFaultRestart(t *testing.T) {
	e := newFaultEnv(t, aztest.Options{OnDisk: true}, func(o *azstore.Options) {
		o.MaxAttempts = 20
		o.MaxBackoff = time.Second
	})
	if err := e.read(ctxT(t), 0, 10); err != nil {
		t.Fatal(err)
	}
	e.srv.Stop()
	err := e.readDuringFault(t, 5000, 200000, 2, func() { e.srv.Restart(t) })
	if err != nil {
		t.Fatalf("read across a restart: %v", err)
	}
	if s := e.st.Stats(); s.Retries < 1 {
		t.Errorf("Retries = %d, want >= 1", s.Retries)
	}
}
