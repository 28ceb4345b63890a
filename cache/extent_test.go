package cache

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/internal/testkit"
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
// predicted with the CRC-32 of its bytes, is found again without a fetch,
// and is written again at the same place after an eviction, even while the
// memory tier still holds the key's bytes from a Get.
func TestMaterialize(t *testing.T) {
	ctx := context.Background()
	c := open(t, Options{Dir: t.TempDir(), MemBytes: 1 << 20})
	src := &source{sizes: func(k Key) int { n, _ := strconv.Atoi(k.Unit); return n }}
	for _, n := range []int{0, 1, 784, 4096, 70000, 3 << 20} {
		k := key(1)
		k.Unit = strconv.Itoa(n)
		want := payload(k, n)
		wp, woff, ok, err := c.Where(k)
		if err != nil || !ok {
			t.Fatalf("Where: %v %v", ok, err)
		}
		wantExt := extents.Extent{Path: wp, Offset: woff, Length: int64(n), Sum: extents.NewChecksum(crc32.ChecksumIEEE(want))}
		before := src.n.Load()
		e, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil {
			t.Fatal(err)
		}
		if e != wantExt || e.Offset%4096 != 0 || src.n.Load() != before+1 {
			t.Fatalf("Materialize = %+v, want %+v; %d fetches", e, wantExt, src.n.Load()-before)
		}
		if !bytes.Equal(readExtent(t, e.Path, e.Offset, e.Length), want) {
			t.Fatalf("%d bytes: extent differs", n)
		}
		if v, ok := c.mem.get(string(mustRef(t, k).sum)); ok {
			t.Fatalf("Materialize filled the memory tier (%d bytes)", len(v))
		}
		// A hit: no fetch.
		if e2, err := c.Materialize(ctx, k, src.fetch(k)); err != nil || e2 != e || src.n.Load() != before+1 {
			t.Fatalf("second Materialize: %+v %v, %d fetches", e2, err, src.n.Load()-before)
		}
		// Truncated (a torn write, or a bug): a miss, fetched again. (An
		// empty payload's entry is its header alone: cut into the header.)
		if err := os.Truncate(e.Path, e.Offset+e.Length/2-1); err != nil {
			t.Fatal(err)
		}
		if e2, err := c.Materialize(ctx, k, src.fetch(k)); err != nil || e2 != e || src.n.Load() != before+2 {
			t.Fatalf("after truncation: %+v %v, %d fetches", e2, err, src.n.Load()-before)
		}
		if !bytes.Equal(readExtent(t, e.Path, e.Offset, e.Length), want) {
			t.Fatalf("%d bytes: extent differs after truncation", n)
		}
		// In memory (Get) but evicted from disk: written again.
		mustGet(t, c, k, src.fetch(k), want)
		if err := os.Remove(e.Path); err != nil {
			t.Fatal(err)
		}
		e2, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil || e2 != e {
			t.Fatalf("after eviction: %+v %v", e2, err)
		}
		if !bytes.Equal(readExtent(t, e2.Path, e2.Offset, e2.Length), want) {
			t.Fatalf("%d bytes: re-materialised extent differs", n)
		}
	}
}

// TestMaterializeRewritesCorrupt: an entry already on disk whose payload
// was damaged in place (header intact: only the payload checksum can tell)
// is not advertised: Materialize drops it, fetches the bytes again,
// rewrites the entry and returns the CRC-32 of the true bytes. Two entries
// whose files were swapped are each another key's file: both rewritten.
func TestMaterializeRewritesCorrupt(t *testing.T) {
	ctx := context.Background()
	c := open(t, Options{Dir: t.TempDir()})
	src := &source{sizes: func(k Key) int { n, _ := strconv.Atoi(k.Unit); return 1000 + 3000*n }}
	keys := []Key{key(2), key(3), key(4)}
	good := map[Key]extents.Extent{}
	for _, k := range keys {
		e, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil {
			t.Fatal(err)
		}
		good[k] = e
	}
	// A flipped payload byte, near the end of a multi-block payload.
	k := keys[2]
	testkit.FlipByte(t, good[k].Path, good[k].Offset+good[k].Length-5)
	before := src.n.Load()
	e, err := c.Materialize(ctx, k, src.fetch(k))
	if err != nil || e != good[k] || src.n.Load() != before+1 {
		t.Fatalf("after a flipped byte: %+v %v (want %+v), %d fetches", e, err, good[k], src.n.Load()-before)
	}
	want := payload(k, src.sizes(k))
	if e.Sum != extents.NewChecksum(crc32.ChecksumIEEE(want)) || !bytes.Equal(readExtent(t, e.Path, e.Offset, e.Length), want) {
		t.Fatal("the corrupt entry was not rewritten with the true bytes")
	}
	if got := c.Stats().Corrupt; got != 1 {
		t.Fatalf("corrupt entries counted: %d, want 1", got)
	}
	// Swapped files: each path holds the other key's entry.
	a, b := good[keys[0]].Path, good[keys[1]].Path
	tmp := a + ".swap"
	for _, mv := range [][2]string{{a, tmp}, {b, a}, {tmp, b}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	before = src.n.Load()
	for _, k := range keys[:2] {
		e, err := c.Materialize(ctx, k, src.fetch(k))
		if err != nil || e != good[k] {
			t.Fatalf("after the swap: %+v %v, want %+v", e, err, good[k])
		}
		if want := payload(k, src.sizes(k)); !bytes.Equal(readExtent(t, e.Path, e.Offset, e.Length), want) {
			t.Fatalf("%s: swapped entry not rewritten", k)
		}
	}
	if n := src.n.Load() - before; n != 2 {
		t.Fatalf("%d fetches after the swap, want 2", n)
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
			if _, err := c.Materialize(context.Background(), k, src.fetch(k)); err != nil {
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
	if _, err := c.Materialize(ctx, k, src.fetch(k)); !errors.Is(err, ErrNotStored) {
		t.Fatalf("entry above the budget: %v", err)
	}
	mem := open(t, Options{MemBytes: 1 << 20})
	if _, err := mem.Materialize(ctx, k, src.fetch(k)); !errors.Is(err, ErrNotStored) {
		t.Fatalf("no disk tier: %v", err)
	}
	if _, _, ok, _ := mem.Where(k); ok {
		t.Fatal("Where without a disk tier")
	}
	boom := errors.New("boom")
	if _, err := c.Materialize(ctx, key(2), func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("fetch error: %v", err)
	}
}
