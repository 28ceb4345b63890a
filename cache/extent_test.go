package cache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
)

func readExtent(t *testing.T, p string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil && n > 0 {
		t.Fatal(err)
	}
	return b
}

// TestMaterialize: the payload is written to disk only, lies where Where
// predicted, is found again without a fetch, and is written again at the
// same place after an eviction, even while the memory tier still holds the
// key's bytes from a Get.
func TestMaterialize(t *testing.T) {
	ctx := context.Background()
	c := open(t, Options{Dir: t.TempDir(), MemBytes: 1 << 20})
	src := &source{sizes: func(k Key) int { n, _ := strconv.Atoi(k.Unit); return n }}
	for _, n := range []int{0, 1, 784, 4096, 70000} {
		k := key(1)
		k.Unit = strconv.Itoa(n)
		want := payload(k, n)
		wp, woff, ok, err := c.Where(k)
		if err != nil || !ok {
			t.Fatalf("Where: %v %v", ok, err)
		}
		before := src.n.Load()
		p, off, length, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil {
			t.Fatal(err)
		}
		if p != wp || off != woff || off%4096 != 0 || length != int64(n) || src.n.Load() != before+1 {
			t.Fatalf("Materialize = %q %d %d (Where %q %d), %d fetches", p, off, length, wp, woff, src.n.Load()-before)
		}
		if !bytes.Equal(readExtent(t, p, off, length), want) {
			t.Fatalf("%d bytes: extent differs", n)
		}
		if v, ok := c.mem.get(string(mustRef(t, k).sum)); ok {
			t.Fatalf("Materialize filled the memory tier (%d bytes)", len(v))
		}
		// A hit: no fetch.
		if _, _, _, err := c.Materialize(ctx, k, src.fetch(k)); err != nil || src.n.Load() != before+1 {
			t.Fatalf("second Materialize: %v, %d fetches", err, src.n.Load()-before)
		}
		// Truncated (a torn write, or a bug): a miss, fetched again. (An
		// empty payload's entry is its header alone: cut into the header.)
		if err := os.Truncate(p, off+length/2-1); err != nil {
			t.Fatal(err)
		}
		if p2, off2, l2, err := c.Materialize(ctx, k, src.fetch(k)); err != nil || p2 != p || off2 != off || l2 != length || src.n.Load() != before+2 {
			t.Fatalf("after truncation: %q %d %d %v, %d fetches", p2, off2, l2, err, src.n.Load()-before)
		}
		if !bytes.Equal(readExtent(t, p, off, length), want) {
			t.Fatalf("%d bytes: extent differs after truncation", n)
		}
		// In memory (Get) but evicted from disk: written again.
		mustGet(t, c, k, src.fetch(k), want)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		p2, off2, l2, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil || p2 != p || off2 != off || l2 != length {
			t.Fatalf("after eviction: %q %d %d %v", p2, off2, l2, err)
		}
		if !bytes.Equal(readExtent(t, p2, off2, l2), want) {
			t.Fatalf("%d bytes: re-materialised extent differs", n)
		}
	}
}

func mustRef(t *testing.T, k Key) ref {
	r, err := k.ref()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMaterializeConcurrentFetchesOnce(t *testing.T) {
	c := open(t, Options{Dir: t.TempDir()})
	src := &source{}
	k := key(3)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, _, err := c.Materialize(context.Background(), k, src.fetch(k)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := src.n.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestMaterializeNotStored(t *testing.T) {
	ctx := context.Background()
	k := key(1)
	src := &source{sizes: func(Key) int { return 64 << 10 }}
	c := open(t, Options{Dir: t.TempDir(), DiskBytes: 16 << 10})
	if _, _, _, err := c.Materialize(ctx, k, src.fetch(k)); !errors.Is(err, ErrNotStored) {
		t.Fatalf("entry above the budget: %v", err)
	}
	mem := open(t, Options{MemBytes: 1 << 20})
	if _, _, _, err := mem.Materialize(ctx, k, src.fetch(k)); !errors.Is(err, ErrNotStored) {
		t.Fatalf("no disk tier: %v", err)
	}
	if _, _, ok, _ := mem.Where(k); ok {
		t.Fatal("Where without a disk tier")
	}
	boom := errors.New("boom")
	if _, _, _, err := c.Materialize(ctx, key(2), func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("fetch error: %v", err)
	}
}
