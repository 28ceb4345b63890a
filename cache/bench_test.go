package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var sampleSizes = []struct {
	name string
	n    int
}{{"784B", 784}, {"100KB", 100 << 10}}

func benchKeys(n int) []Key {
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = key(i)
	}
	return keys
}

func warm(b *testing.B, c *Cache, keys []Key, size int) {
	for _, k := range keys {
		want := payload(k, size)
		if _, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return want, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func noFetch(context.Context) ([]byte, error) { return nil, fmt.Errorf("unexpected fetch") }

// BenchmarkGetMemoryHit: Get of warm keys served by the memory tier, with
// the front LRU (default) and with ristretto alone.
func BenchmarkGetMemoryHit(b *testing.B) {
	for _, front := range []struct {
		name  string
		bytes int64
	}{{"front", 0}, {"ristretto-only", -1}} {
		for _, sz := range sampleSizes {
			b.Run(front.name+"/"+sz.name, func(b *testing.B) {
				c := open(b, Options{MemBytes: 1 << 30, FrontBytes: front.bytes})
				keys := benchKeys(64)
				warm(b, c, keys, sz.n)
				c.mem.rc.Wait()
				b.SetBytes(int64(sz.n))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := c.Get(context.Background(), keys[i%len(keys)], noFetch); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s := c.Stats()
				if s.MemHits < uint64(b.N) {
					b.Fatalf("only %d of %d Gets hit memory", s.MemHits, b.N)
				}
			})
		}
	}
}

// BenchmarkGetMemoryHitParallel: the same on all cores (front LRU mutex
// contention).
func BenchmarkGetMemoryHitParallel(b *testing.B) {
	for _, front := range []struct {
		name  string
		bytes int64
	}{{"front", 0}, {"ristretto-only", -1}} {
		b.Run(front.name, func(b *testing.B) {
			c := open(b, Options{MemBytes: 1 << 30, FrontBytes: front.bytes})
			keys := benchKeys(64)
			warm(b, c, keys, 784)
			c.mem.rc.Wait()
			b.SetBytes(784)
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				for pb.Next() {
					c.Get(context.Background(), keys[i%len(keys)], noFetch)
					i++
				}
			})
		})
	}
}

// BenchmarkGetDiskHit: Get of warm keys with no memory tier: open, two
// preads, checksum, close (plus an index update) per Get. The files are in
// the page cache, so this is the cache's own cost, not the device's.
func BenchmarkGetDiskHit(b *testing.B) {
	for _, sz := range sampleSizes {
		b.Run(sz.name, func(b *testing.B) {
			c := open(b, Options{Dir: b.TempDir(), MinFreeFraction: -1})
			keys := benchKeys(64)
			warm(b, c, keys, sz.n)
			b.SetBytes(int64(sz.n))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Get(context.Background(), keys[i%len(keys)], noFetch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetMiss: a miss whose fetch returns at once: the cost the cache
// adds to a real fetch (lookups, fill goroutine, temp file, fsync, rename).
func BenchmarkGetMiss(b *testing.B) {
	for _, sz := range sampleSizes {
		for _, skip := range []bool{false, true} {
			name := sz.name + "/fsync"
			if skip {
				name = sz.name + "/no-fsync"
			}
			b.Run(name, func(b *testing.B) {
				c := open(b, Options{MemBytes: 64 << 20, Dir: b.TempDir(), MinFreeFraction: -1, SkipFsync: skip})
				data := payload(key(0), sz.n)
				b.SetBytes(int64(sz.n))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := Key{Kind: "bench", File: "f", Unit: fmt.Sprint(i)}
					if _, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return data, nil }); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOpen: New on a directory of 10,000 entries (the index scan).
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	const entries = 10000
	root := filepath.Join(dir, subdirName)
	for i := range 256 {
		os.MkdirAll(filepath.Join(root, fmt.Sprintf("%02x", i)), 0o755)
	}
	data := payload(key(0), 784)
	for i := range entries {
		r, _ := key(i).ref()
		hdr := encodeHeader(r.text, data, time.Now().UnixNano())
		buf := append(append(hdr, data...), make([]byte, blockSize-len(data))...)
		if err := os.WriteFile(filepath.Join(root, r.name[:2], r.name+entrySuffix), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := New(Options{Dir: dir, MinFreeFraction: -1})
		if err != nil {
			b.Fatal(err)
		}
		if s := c.Stats(); s.DiskEntries != entries {
			b.Fatalf("%d entries indexed", s.DiskEntries)
		}
		c.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/entries, "ns/entry")
}

// TestMemTierReadAfterSet measures what the front LRU is for: a payload
// read right after it was stored (read-ahead: Prefetch, then Get). It also
// measures a cyclic scan over 1.5× the tier, where ristretto's admission
// helps. The numbers are logged (go test -v -run MemTier) and quoted in
// bench/RESULTS.md; only the front LRU's guarantee is asserted.
func TestMemTierReadAfterSet(t *testing.T) {
	const (
		memBytes   = 16 << 20
		goroutines = 8
		perG       = 500
		size       = 784
	)
	for _, cfg := range []struct {
		name  string
		front int64
	}{{"ristretto only", -1}, {"front LRU 1/8 + ristretto", 0}} {
		c := open(t, Options{MemBytes: memBytes, FrontBytes: cfg.front})
		var hits atomic.Int64
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					k := Key{Kind: "ras", File: fmt.Sprint(g), Unit: fmt.Sprint(i)}
					if _, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return make([]byte, size), nil }); err != nil {
						t.Error(err)
					}
					if _, ok := c.Peek(k); ok {
						hits.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		ratio := float64(hits.Load()) / (goroutines * perG)

		// Cyclic scan: 5 passes over a working set 1.5× the tier.
		scan := open(t, Options{MemBytes: 1 << 20, FrontBytes: cfg.front})
		items := (3 << 20) / 2 / size
		for pass := range 5 {
			for i := range items {
				k := Key{Kind: "scan", Unit: fmt.Sprint(i)}
				scan.Get(context.Background(), k, func(context.Context) ([]byte, error) { return make([]byte, size), nil })
			}
			if pass == 0 {
				scan.mem.rc.Wait()
			}
		}
		s := scan.Stats()
		scanRatio := float64(s.MemHits) / float64(s.MemHits+s.MemMisses)

		// Read after store once the set buffer is applied (rc.Wait), with a
		// full tier: what admission alone refuses.
		full := open(t, Options{MemBytes: 1 << 20, FrontBytes: cfg.front})
		var fullHits int
		const fullItems = 4 * (1 << 20) / size
		for i := range fullItems {
			k := Key{Kind: "full", Unit: fmt.Sprint(i)}
			full.Get(context.Background(), k, func(context.Context) ([]byte, error) { return make([]byte, size), nil })
			full.mem.rc.Wait()
			if _, ok := full.Peek(k); ok && i >= fullItems/2 {
				fullHits++
			}
		}
		t.Logf("%-26s read-after-store hits %5.1f%% (after Wait, full tier %5.1f%%)   cyclic scan (1.5x) hits %5.1f%%",
			cfg.name, 100*ratio, 100*float64(fullHits)/(fullItems/2), 100*scanRatio)
		if cfg.front == 0 && ratio != 1 {
			t.Errorf("with the front LRU, %.1f%% of reads after a store hit memory; want 100%%", 100*ratio)
		}
	}
}
