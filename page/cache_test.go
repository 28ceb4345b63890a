package page

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

func memKey(i int) Key { return Key{Kind: "page", File: "f", Unit: strconv.Itoa(i)} }

// MemCache keeps the most recently used entries within its bytes (each
// counted with its overhead), evicting the least recently used.
func TestMemCacheBound(t *testing.T) {
	ctx := context.Background()
	c := NewMemCache(3 * (100 + memEntryOverhead))
	var fetches atomic.Int32
	get := func(i int) []byte {
		v, err := c.Get(ctx, memKey(i), func(context.Context) ([]byte, error) {
			fetches.Add(1)
			return bytes.Repeat([]byte{byte(i)}, 100), nil
		})
		if err != nil || len(v) != 100 || v[0] != byte(i) {
			t.Fatalf("Get(%d) = %v, %v", i, v, err)
		}
		return v
	}
	get(0)
	get(1)
	get(2)
	get(0) // 1 is now the least recently used
	get(3) // evicts 1
	if n, b := c.Len(); n != 3 || b != 3*(100+memEntryOverhead) {
		t.Fatalf("Len = %d entries, %d bytes; want 3, %d", n, b, 3*(100+memEntryOverhead))
	}
	fetches.Store(0)
	get(0)
	get(2)
	get(3)
	if n := fetches.Load(); n != 0 {
		t.Fatalf("%d fetches for kept entries", n)
	}
	get(1)
	if n := fetches.Load(); n != 1 {
		t.Fatalf("the evicted entry was fetched %d times, want 1", n)
	}

	// Nothing is kept by a cache of no bytes, or an entry larger than it.
	for _, max := range []int64{0, -1, 50} {
		c := NewMemCache(max)
		if _, err := c.Get(ctx, memKey(0), func(context.Context) ([]byte, error) { return make([]byte, 10), nil }); err != nil {
			t.Fatal(err)
		}
		if n, b := c.Len(); n != 0 || b != 0 {
			t.Errorf("NewMemCache(%d) kept %d entries, %d bytes", max, n, b)
		}
	}
}

// Concurrent Gets of a missing key share one fetch; its error reaches
// them all and is not kept.
func TestMemCacheSharedFetch(t *testing.T) {
	c := NewMemCache(1 << 20)
	release := make(chan struct{})
	var fetches atomic.Int32
	boom := errors.New("boom")
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Get(context.Background(), memKey(1), func(context.Context) ([]byte, error) {
				fetches.Add(1)
				<-release
				return nil, boom
			})
			errs <- err
		}()
	}
	testkit.WaitUntil(t, "16 waiters", func() bool { return c.flights.Waiters(memKey(1)) == n })
	close(release)
	for range n {
		if err := <-errs; err != boom {
			t.Fatalf("err = %v, want the fetch's error", err)
		}
	}
	if fetches.Load() != 1 {
		t.Fatalf("%d fetches, want 1", fetches.Load())
	}
	v, err := c.Get(context.Background(), memKey(1), func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(v) != "ok" {
		t.Fatalf("after a failed fetch: %q, %v; want a new fetch", v, err)
	}
}

// The Get that started a fetch giving up leaves at once, and does not fail
// the other Gets waiting for it: the fetch goes on, uncancelled.
func TestMemCacheCancelledStarter(t *testing.T) {
	c := NewMemCache(1 << 20)
	entered, release := make(chan struct{}), make(chan struct{})
	fetch := func(ctx context.Context) ([]byte, error) {
		close(entered)
		select {
		case <-release:
			return []byte("page"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, memKey(2), fetch)
		first <- err
	}()
	<-entered
	second := make(chan []byte, 1)
	go func() {
		v, err := c.Get(context.Background(), memKey(2), fetch)
		if err != nil {
			t.Error(err)
		}
		second <- v
	}()
	testkit.WaitUntil(t, "the second Get", func() bool { return c.flights.Waiters(memKey(2)) == 2 })
	cancel()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled Get: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled Get did not leave")
	}
	close(release)
	select {
	case v := <-second:
		if string(v) != "page" {
			t.Fatalf("the other Get: %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other Get did not return")
	}
}
