package cache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/deltafs/deltafs/internal/testkit"
)

func TestGetFillsBothTiers(t *testing.T) {
	log, _ := testLogger(t)
	dir := t.TempDir()
	c := open(t, Options{MemBytes: 1 << 20, Dir: dir, Logger: log})
	var src source
	k := key(1)
	for i := 0; i < 3; i++ {
		mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	}
	if n := src.n.Load(); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
	if !exists(entryPath(c, k)) {
		t.Fatal("no disk entry after a fetch")
	}
	s := c.Stats()
	if s.MemHits != 2 || s.Fetches != 1 || s.FetchedBytes != 1000 || s.DiskEntries != 1 || s.DiskBytes != 8192 {
		t.Fatalf("stats: %+v", s)
	}
	if v, ok := c.Peek(k); !ok || !bytes.Equal(v, payload(k, 1000)) {
		t.Fatal("Peek misses a cached key")
	}
	if _, ok := c.Peek(key(2)); ok {
		t.Fatal("Peek hits an absent key")
	}
}

func TestMemoryOnly(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20})
	var src source
	k := key(1)
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	if src.n.Load() != 1 {
		t.Fatalf("fetches = %d, want 1", src.n.Load())
	}
	if _, _, _, ok := c.Locate(k); ok {
		t.Fatal("Locate without a disk tier")
	}
	if c.Dir() != "" {
		t.Fatal("memory-only cache has a Dir")
	}
}

func TestNoTiersStillFetches(t *testing.T) {
	c := open(t, Options{})
	var src source
	k := key(1)
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	if src.n.Load() != 2 {
		t.Fatalf("fetches = %d, want 2", src.n.Load())
	}
}

func TestKeyValidation(t *testing.T) {
	c := open(t, Options{})
	if _, err := c.Get(context.Background(), Key{File: "x"}, nil); !errors.Is(err, errEmptyKind) {
		t.Fatalf("Get without Kind: %v", err)
	}
	a, b := Key{Kind: "page", File: "a b", Unit: "c"}, Key{Kind: "page", File: "a", Unit: "b c"}
	if a.String() == b.String() {
		t.Fatal("distinct keys with the same text")
	}
}

// TestSingleflight: 16 concurrent readers of one missing key cause exactly
// one fetch, and all get the same bytes.
func TestSingleflight(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20, Dir: t.TempDir()})
	k := key(7)
	want := payload(k, 5000)
	var fetches atomic.Int64
	release := make(chan struct{})
	fetch := func(ctx context.Context) ([]byte, error) {
		fetches.Add(1)
		<-release
		return bytes.Clone(want), nil
	}
	const readers = 16
	var wg sync.WaitGroup
	results := make([][]byte, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(context.Background(), k, fetch)
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		}()
	}
	testkit.WaitUntil(t, "16 waiters", func() bool { return waiters(c, k) == readers })
	close(release)
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
	for i, v := range results {
		if !bytes.Equal(v, want) {
			t.Fatalf("reader %d got wrong bytes", i)
		}
	}
	if s := c.Stats(); s.Shared != readers-1 {
		t.Fatalf("Shared = %d, want %d", s.Shared, readers-1)
	}
}

func waiters(c *Cache, k Key) int {
	r, _ := k.ref()
	return c.flights.Waiters(r.sum)
}

// TestFetchErrorCachesNothing: a failing fetch's error reaches every waiter,
// nothing is stored, and the next Get fetches again.
func TestFetchErrorCachesNothing(t *testing.T) {
	dir := t.TempDir()
	c := open(t, Options{MemBytes: 1 << 20, Dir: dir})
	k := key(3)
	boom := errors.New("storage says no")
	release := make(chan struct{})
	var fetches atomic.Int64
	failing := func(ctx context.Context) ([]byte, error) {
		fetches.Add(1)
		<-release
		return nil, boom
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Get(context.Background(), k, failing); !errors.Is(err, boom) {
				t.Errorf("waiter got %v, want %v", err, boom)
			}
		}()
	}
	testkit.WaitUntil(t, "4 waiters", func() bool { return waiters(c, k) == 4 })
	close(release)
	wg.Wait()
	if fetches.Load() != 1 {
		t.Fatalf("fetches = %d", fetches.Load())
	}
	if _, ok := c.Peek(k); ok {
		t.Fatal("a failed fetch left an entry")
	}
	if entries, temps := ownFiles(t, dir); len(entries)+len(temps) != 0 {
		t.Fatalf("files after a failed fetch: %v %v", entries, temps)
	}
	var src source
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	if s := c.Stats(); s.FetchErrors != 1 || s.Fetches != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

// TestCancelledWaiter: the caller that started a fetch giving up does not
// fail the other waiters; when every waiter gives up the fetch is cancelled
// and the next Get starts afresh.
func TestCancelledWaiter(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20, Dir: t.TempDir()})
	k := key(4)
	want := payload(k, 100)

	release := make(chan struct{})
	fetch := func(ctx context.Context) ([]byte, error) {
		select {
		case <-release:
			return bytes.Clone(want), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() { _, err := c.Get(leaderCtx, k, fetch); leaderErr <- err }()
	testkit.WaitUntil(t, "leader", func() bool { return waiters(c, k) == 1 })
	other := make(chan []byte, 1)
	go func() {
		v, err := c.Get(context.Background(), k, fetch)
		if err != nil {
			t.Error(err)
		}
		other <- v
	}()
	testkit.WaitUntil(t, "second waiter", func() bool { return waiters(c, k) == 2 })
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	close(release)
	if v := <-other; !bytes.Equal(v, want) {
		t.Fatal("second waiter got wrong bytes")
	}

	// Every waiter leaves: the fetch sees its context cancelled.
	k2 := key(5)
	sawCancel := make(chan struct{})
	blocking := func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		close(sawCancel)
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := c.Get(ctx, k2, blocking); done <- err }()
	testkit.WaitUntil(t, "waiter", func() bool { return waiters(c, k2) == 1 })
	cancel()
	<-done
	select {
	case <-sawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("fetch not cancelled after every waiter left")
	}
	var src source
	mustGet(t, c, k2, src.fetch(k2), payload(k2, 1000))
	if src.n.Load() != 1 {
		t.Fatal("Get after an abandoned fetch did not fetch")
	}
}

func TestFetchPanicBecomesError(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20})
	_, err := c.Get(context.Background(), key(1), func(context.Context) ([]byte, error) { panic("oops") })
	if err == nil || !contains(err.Error(), "panicked: oops") {
		t.Fatalf("err = %v", err)
	}
}

// TestBypassLargerThanCache: a payload bigger than a tier is returned but not
// stored, and does not evict what the tier holds.
func TestBypassLargerThanCache(t *testing.T) {
	dir := t.TempDir()
	c := open(t, Options{MemBytes: 32 << 10, Dir: dir, DiskBytes: 64 << 10, MinFreeFraction: -1})
	var src source
	src.sizes = func(k Key) int {
		if k.Unit == "9" {
			return 100 << 10
		}
		return 1000
	}
	small := key(1)
	mustGet(t, c, small, src.fetch(small), payload(small, 1000))
	big := key(9)
	mustGet(t, c, big, src.fetch(big), payload(big, 100<<10))
	mustGet(t, c, big, src.fetch(big), payload(big, 100<<10))
	if n := src.n.Load(); n != 3 {
		t.Fatalf("fetches = %d, want 3 (the big one twice)", n)
	}
	if exists(entryPath(c, big)) {
		t.Fatal("entry larger than the disk budget was stored")
	}
	if !exists(entryPath(c, small)) {
		t.Fatal("the big entry evicted a small one")
	}
	if s := c.Stats(); s.Bypassed != 2 || s.DiskEvictions != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

// TestFreeSpaceFloor: with a simulated nearly full filesystem the cache
// shrinks to keep 5% free, and stores nothing once other data leaves no
// room, while Get keeps returning correct bytes.
func TestFreeSpaceFloor(t *testing.T) {
	dir := t.TempDir()
	const total = 100 << 20
	var other atomic.Int64 // bytes used by others
	other.Store(94 << 20)
	var c *Cache
	space := func(string) (uint64, uint64, error) {
		_, cached := c.disk.usage()
		return uint64(total - other.Load() - cached), total, nil
	}
	c = open(t, Options{Dir: dir, DiskBytes: 1 << 30, diskSpace: space})
	var src source
	src.sizes = func(Key) int { return 60 << 10 } // 64 KiB + 4 KiB header per entry
	for i := range 40 {                           // 40 × 68 KiB = 2.7 MiB > the 1 MiB the floor leaves
		k := key(i)
		mustGet(t, c, k, src.fetch(k), payload(k, 60<<10))
		_, cached := c.disk.usage()
		if free := total - other.Load() - cached; free < total/20 {
			t.Fatalf("after entry %d: %d bytes free, below the 5%% floor %d", i, free, total/20)
		}
	}
	s := c.Stats()
	if s.DiskEvictions == 0 || s.DiskBytes == 0 || s.DiskBytes > 1<<20 {
		t.Fatalf("the floor did not bound the cache: %+v", s)
	}
	// Others fill the disk past the floor: nothing can be stored any more,
	// what is cached stays, reads still work.
	other.Store(96 << 20)
	before := c.Stats()
	k := key(100)
	mustGet(t, c, k, src.fetch(k), payload(k, 60<<10))
	after := c.Stats()
	if after.FloorSkips != before.FloorSkips+1 || exists(entryPath(c, k)) {
		t.Fatalf("stored despite a full disk: %+v", after)
	}
	if after.DiskEvictions != before.DiskEvictions {
		t.Fatal("evicted entries although that could not make room")
	}
}

// TestLocate: the payload lies contiguous at a 4 KiB-aligned offset, for
// keys whose text fits the first header block and for longer ones.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	c := open(t, Options{Dir: dir})
	long := key(1)
	long.File = string(bytes.Repeat([]byte("d/"), 3000)) + "part.parquet"
	for _, k := range []Key{key(1), long} {
		for _, n := range []int{0, 1, 784, 4096, 100 << 10} {
			k.Unit = strconv.Itoa(n)
			want := payload(k, n)
			mustGet(t, c, k, func(context.Context) ([]byte, error) { return bytes.Clone(want), nil }, want)
			p, off, length, ok := c.Locate(k)
			if !ok {
				t.Fatalf("Locate(%d bytes) missed", n)
			}
			if !filepath.IsAbs(p) || off%4096 != 0 || length != int64(n) {
				t.Fatalf("Locate = %q %d %d", p, off, length)
			}
			if len(k.File) > 4096 && off < 8192 {
				t.Fatalf("long key: payload offset %d inside a one-block header?", off)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, length)
			if _, err := f.ReadAt(got, off); err != nil && length > 0 {
				t.Fatal(err)
			}
			f.Close()
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes at the located extent differ (%d bytes)", n)
			}
			if n > 0 {
				checkODirect(t, p, off, want)
			}
		}
	}
	if _, _, _, ok := c.Locate(key(99)); ok {
		t.Fatal("Locate found an absent key")
	}
}

func TestPrefetch(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20, PrefetchWorkers: 2, PrefetchBytes: 8 << 10})
	release := make(chan struct{})
	var fetches atomic.Int64
	fetchFor := func(k Key) FetchFunc {
		return func(ctx context.Context) ([]byte, error) {
			fetches.Add(1)
			<-release
			return payload(k, 1000), nil
		}
	}
	// 2 KiB hints against an 8 KiB bound: four admitted, the fifth declined.
	var admitted int
	for i := range 8 {
		if c.Prefetch(key(i), 2<<10, fetchFor(key(i))) {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("admitted %d prefetches, want 4", admitted)
	}
	close(release)
	testkit.WaitUntil(t, "prefetches", func() bool { return c.prefetchInFlight.Load() == 0 })
	for i := range 4 {
		if v, ok := c.Peek(key(i)); !ok || !bytes.Equal(v, payload(key(i), 1000)) {
			t.Fatalf("prefetched key %d not cached", i)
		}
	}
	if c.Prefetch(key(0), 1000, fetchFor(key(0))) {
		t.Fatal("Prefetch of a key in memory was queued")
	}
	// One oversized prefetch is admitted when nothing else is in flight.
	if !c.Prefetch(key(50), 1<<20, fetchFor(key(50))) {
		t.Fatal("an oversized prefetch with nothing in flight was declined")
	}
	testkit.WaitUntil(t, "big prefetch", func() bool { return c.prefetchInFlight.Load() == 0 })
	if s := c.Stats(); s.PrefetchQueued != 5 || s.PrefetchDropped != 4 {
		t.Fatalf("stats: %+v", s)
	}
	if fetches.Load() != 5 {
		t.Fatalf("fetches = %d", fetches.Load())
	}
}

func TestPrefetchNeverBlocks(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20, PrefetchWorkers: 1, PrefetchBytes: 1 << 30})
	block := make(chan struct{})
	defer close(block)
	start := time.Now()
	for i := range 1000 {
		c.Prefetch(key(i), 1, func(ctx context.Context) ([]byte, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 Prefetch calls took %v", d)
	}
	if s := c.Stats(); s.PrefetchQueued > 5 || s.PrefetchDropped < 995 {
		t.Fatalf("queue not bounded: %+v", s)
	}
}

func TestCloseCancelsFetches(t *testing.T) {
	c, err := New(Options{MemBytes: 1 << 20, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	c.Prefetch(key(1), 1, func(ctx context.Context) ([]byte, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	<-started
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not cancel a running fetch")
	}
	if _, err := c.Get(context.Background(), key(1), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	c.Close()
}

func TestStatsAndCollectors(t *testing.T) {
	c := open(t, Options{MemBytes: 1 << 20, Dir: t.TempDir()})
	var src source
	for i := range 10 {
		k := key(i)
		mustGet(t, c, k, src.fetch(k), payload(k, 1000))
		mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	}
	s := c.Stats()
	if s.MemLatency.Count > 10 || s.FetchLatency.Count != 10 || s.FetchLatency.P50 <= 0 || s.FetchLatency.P99 < s.FetchLatency.P50 {
		t.Fatalf("latency stats: %+v %+v", s.MemLatency, s.FetchLatency)
	}
	reg := prometheus.NewRegistry()
	for _, col := range c.Collectors() {
		reg.MustRegister(col)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				got[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				got[name] = m.Gauge.GetValue()
			case m.Histogram != nil:
				got[name] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	for name, want := range map[string]float64{
		"deltafs_cache_hits_total/memory": 10,
		"deltafs_cache_fetches_total":     10,
		"deltafs_cache_disk_entries":      10,
		"deltafs_cache_get_seconds/fetch": 10,
		"deltafs_cache_disk_budget_bytes": DefaultDiskBytes,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var h histogram
	for i := range 100 {
		h.observe(time.Duration(i+1) * time.Microsecond)
	}
	l := h.latency()
	if l.Count != 100 {
		t.Fatal(l)
	}
	for _, c := range []struct {
		got, exact time.Duration
	}{{l.P50, 50 * time.Microsecond}, {l.P90, 90 * time.Microsecond}, {l.P99, 99 * time.Microsecond}} {
		if c.got < c.exact || float64(c.got) > 1.42*float64(c.exact) {
			t.Errorf("percentile %v for exact %v", c.got, c.exact)
		}
	}
	h.observe(time.Hour) // beyond the last bound: lands in the last bucket
}
