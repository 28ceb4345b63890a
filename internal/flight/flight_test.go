package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bound is how long a test waits for something that should happen at once.
const bound = 10 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

type result struct {
	v      int
	joined bool
	err    error
}

func TestShared(t *testing.T) {
	var g Group[string, int]
	var calls atomic.Int32
	release := make(chan struct{})
	const n = 16
	out := make(chan result, n)
	for range n {
		go func() {
			v, joined, err := g.Do(context.Background(), "k", func(context.Context) (int, error) {
				calls.Add(1)
				<-release
				return 42, nil
			})
			out <- result{v, joined, err}
		}()
	}
	waitFor(t, "16 waiters", func() bool { return g.Waiters("k") == n })
	close(release)
	started := 0
	for range n {
		r := recv(t, "a result", out)
		if r.err != nil || r.v != 42 {
			t.Fatalf("Do = %d, %v", r.v, r.err)
		}
		if !r.joined {
			started++
		}
	}
	if calls.Load() != 1 || started != 1 {
		t.Fatalf("%d calls, %d callers started one; want 1, 1", calls.Load(), started)
	}
	if g.Waiters("k") != 0 {
		t.Fatal("the finished call is still in progress")
	}
}

// TestErrorNotRemembered: an error reaches the callers of its call, and
// the next caller calls again.
func TestErrorNotRemembered(t *testing.T) {
	var g Group[int, string]
	boom := errors.New("boom")
	if _, _, err := g.Do(context.Background(), 1, func(context.Context) (string, error) { return "", boom }); err != boom {
		t.Fatalf("err = %v, want boom", err)
	}
	v, joined, err := g.Do(context.Background(), 1, func(context.Context) (string, error) { return "ok", nil })
	if v != "ok" || joined || err != nil {
		t.Fatalf("second Do = %q, %v, %v", v, joined, err)
	}
}

// TestLeaverDoesNotFailOthers: a caller whose context ends leaves at once
// with its own error; the call goes on, uncancelled, for the others — also
// when the one who left is the one who started it.
func TestLeaverDoesNotFailOthers(t *testing.T) {
	var g Group[string, int]
	release := make(chan struct{})
	cancelled := make(chan bool, 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan result, 1)
	go func() {
		v, joined, err := g.Do(ctx1, "k", func(ctx context.Context) (int, error) {
			<-release
			cancelled <- ctx.Err() != nil
			return 7, nil
		})
		first <- result{v, joined, err}
	}()
	waitFor(t, "the first caller", func() bool { return g.Waiters("k") == 1 })
	second := make(chan result, 1)
	go func() {
		v, joined, err := g.Do(context.Background(), "k", func(context.Context) (int, error) { return -1, nil })
		second <- result{v, joined, err}
	}()
	waitFor(t, "the second caller", func() bool { return g.Waiters("k") == 2 })
	cancel1()
	if r := recv(t, "the first caller", first); !errors.Is(r.err, context.Canceled) || r.joined {
		t.Fatalf("first caller: %+v, want its own context.Canceled", r)
	}
	close(release)
	if r := recv(t, "the second caller", second); r.err != nil || r.v != 7 || !r.joined {
		t.Fatalf("second caller: %+v, want 7 from the shared call", r)
	}
	if recv(t, "the call", cancelled) {
		t.Fatal("the call's context was cancelled while a caller waited")
	}
}

// TestAbandoned: when every caller has left, the call is cancelled and
// forgotten: the next caller starts a fresh call.
func TestAbandoned(t *testing.T) {
	var g Group[string, int]
	ended := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, _, err := g.Do(ctx, "k", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			ended <- ctx.Err()
			return 0, ctx.Err()
		})
		left <- err
	}()
	waitFor(t, "the caller", func() bool { return g.Waiters("k") == 1 })
	cancel()
	if err := recv(t, "the caller", left); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller: %v", err)
	}
	if err := recv(t, "the call's cancellation", ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("call ended with %v", err)
	}
	v, joined, err := g.Do(context.Background(), "k", func(context.Context) (int, error) { return 3, nil })
	if v != 3 || joined || err != nil {
		t.Fatalf("after abandonment: %d, %v, %v; want a fresh call", v, joined, err)
	}
	g.Wait()
}

// TestFinish: with Finish, an abandoned call goes on, uncancelled, and a
// later caller joins it.
func TestFinish(t *testing.T) {
	g := Group[string, int]{Finish: true}
	release := make(chan struct{})
	var calls atomic.Int32
	fn := func(ctx context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 5, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, _, err := g.Do(ctx, "k", fn)
		left <- err
	}()
	waitFor(t, "the caller", func() bool { return g.Waiters("k") == 1 })
	cancel()
	if err := recv(t, "the caller", left); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller: %v", err)
	}
	later := make(chan result, 1)
	go func() {
		v, joined, err := g.Do(context.Background(), "k", fn)
		later <- result{v, joined, err}
	}()
	waitFor(t, "the later caller", func() bool { return g.Waiters("k") == 1 })
	close(release)
	if r := recv(t, "the later caller", later); r.v != 5 || !r.joined || r.err != nil {
		t.Fatalf("later caller: %+v, want 5 from the first call, uncancelled", r)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls, want 1", calls.Load())
	}
}

// TestBase: ending Base cancels every running call; Wait returns once they
// have returned.
func TestBase(t *testing.T) {
	base, stop := context.WithCancel(context.Background())
	g := Group[int, int]{Base: base}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for k := range 3 {
		wg.Go(func() {
			_, _, err := g.Do(context.Background(), k, func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 0, ctx.Err()
			})
			errs <- err
		})
	}
	waitFor(t, "three calls", func() bool { return g.Waiters(0)+g.Waiters(1)+g.Waiters(2) == 3 })
	stop()
	waited := make(chan struct{})
	go func() { g.Wait(); wg.Wait(); close(waited) }()
	recv(t, "Wait", waited)
	for range 3 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("a call ended with %v, want context.Canceled", err)
		}
	}
}

// TestValuesKept: the call's context keeps the caller's values.
func TestValuesKept(t *testing.T) {
	type ctxKey struct{}
	var g Group[int, string]
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	v, _, err := g.Do(ctx, 0, func(ctx context.Context) (string, error) {
		s, _ := ctx.Value(ctxKey{}).(string)
		return s, nil
	})
	if v != "v" || err != nil {
		t.Fatalf("value %q, %v", v, err)
	}
}
