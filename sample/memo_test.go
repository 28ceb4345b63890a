package sample

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// A memo shares one build among concurrent gets, shares the value while
// someone holds it, builds again once no one does, and remembers no error.
func TestMemo(t *testing.T) {
	var m memo[string, [64]byte]
	var builds atomic.Int32
	release := make(chan struct{})
	build := func(context.Context) (*[64]byte, error) {
		builds.Add(1)
		<-release
		return new([64]byte), nil
	}
	const n = 8
	got := make([]*[64]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := m.get(context.Background(), "k", build)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	testkit.WaitUntil(t, "8 gets", func() bool { return m.builds.Waiters("k") == n })
	close(release)
	wg.Wait()
	for _, v := range got {
		if v == nil || v != got[0] {
			t.Fatal("concurrent gets got different values")
		}
	}
	if builds.Load() != 1 {
		t.Fatalf("%d builds, want 1", builds.Load())
	}
	held := got[0]
	if v, _ := m.get(context.Background(), "k", build); v != held {
		t.Fatal("a held value was built again")
	}
	if builds.Load() != 1 {
		t.Fatalf("%d builds, want 1", builds.Load())
	}
	runtime.KeepAlive(held)

	// Once no one holds it, the value goes, and so does its entry.
	got, held = nil, nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		m.mu.Lock()
		left := len(m.m)
		m.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the entry of a value no one holds stayed")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := m.get(context.Background(), "k", build); err != nil || builds.Load() != 2 {
		t.Fatalf("after the value went: %v, %d builds; want a second build", err, builds.Load())
	}

	// Errors are not remembered.
	boom := errors.New("boom")
	if _, err := m.get(context.Background(), "e", func(context.Context) (*[64]byte, error) { return nil, boom }); err != boom {
		t.Fatalf("err = %v", err)
	}
	if v, err := m.get(context.Background(), "e", func(context.Context) (*[64]byte, error) { return new([64]byte), nil }); err != nil || v == nil {
		t.Fatalf("after an error: %v, %v", v, err)
	}
}

// A get whose context ends while it waits for another's build leaves at
// once; the build goes on for the one who started it.
func TestMemoWaiterLeaves(t *testing.T) {
	var m memo[int, int]
	release := make(chan struct{})
	build := func(ctx context.Context) (*int, error) {
		select {
		case <-release:
			v := 7
			return &v, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	first := make(chan *int, 1)
	go func() {
		v, err := m.get(context.Background(), 1, build)
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	testkit.WaitUntil(t, "the build", func() bool { return m.builds.Waiters(1) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := m.get(ctx, 1, build); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v, want its own deadline", err)
	}
	close(release)
	select {
	case v := <-first:
		if v == nil || *v != 7 {
			t.Fatalf("builder got %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the build did not finish")
	}
}
