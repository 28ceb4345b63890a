package cache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/internal/flight"
)

// Defaults for zero Options fields.
const (
	DefaultDiskBytes       = 10 << 30 // 10 GiB
	DefaultMinFreeFraction = 0.05
	DefaultTouchInterval   = time.Minute
	DefaultStaleTempAge    = 10 * time.Minute
	DefaultRescanInterval  = time.Minute
	DefaultPrefetchWorkers = 4
	DefaultPrefetchBytes   = 64 << 20
)

// ErrClosed is returned by Get after Close.
var ErrClosed = errors.New("cache: closed")

// FetchFunc produces a missing entry's bytes, typically by a ranged read from
// the table's storage. It must honour ctx. The slice it returns is owned by
// the cache from then on: the fetcher must not modify or reuse it.
type FetchFunc func(ctx context.Context) ([]byte, error)

// Options configure a Cache. The zero value of every field but Dir and
// MemBytes means its default.
type Options struct {
	// MemBytes bounds the memory tier's payload bytes; 0 means no memory tier.
	MemBytes int64
	// FrontBytes is the part of MemBytes given to the strict LRU in front of
	// ristretto: 0 means MemBytes/8, negative means none (ristretto only).
	FrontBytes int64

	// Dir is the parent of the cache's own directory, deltafs-cache-v1
	// (DefaultDir gives the usual one); "" means no disk tier.
	Dir string
	// DiskBytes bounds the disk tier's file bytes (0: DefaultDiskBytes).
	DiskBytes int64
	// MinFreeFraction of the filesystem is kept free (0: 5%; negative: no
	// floor).
	MinFreeFraction float64
	// TouchInterval: an entry's file times are set on access at most this
	// often (0: one minute), bounding metadata writes on a hot entry.
	TouchInterval time.Duration
	// StaleTempAge: temp files older than this are removed even if their
	// writer's pid is alive (0: ten minutes).
	StaleTempAge time.Duration
	// SkipFsync writes entries without fsync before the rename. Every read
	// verifies checksums, so an entry torn by a power loss is detected and
	// refetched, never served; what fsync buys is only that a just-written
	// entry survives a power loss. BenchmarkGetMiss: fsync is most of a
	// miss's local cost.
	SkipFsync bool
	// RescanInterval bounds how often a process that has to evict re-reads
	// the directory to see other processes' entries (0: one minute).
	RescanInterval time.Duration

	// PrefetchWorkers fetch in the background for Prefetch (0: 4; negative:
	// Prefetch always declines).
	PrefetchWorkers int
	// PrefetchBytes bounds the bytes of queued and running prefetches, as
	// estimated by their size hints (0: 64 MiB).
	PrefetchBytes int64

	// Logger receives warnings about corrupt entries and I/O failures
	// (nil: slog.Default()).
	Logger *slog.Logger

	// Test hooks.
	diskSpace func(path string) (avail, total uint64, err error)
	now       func() time.Time
}

func (o *Options) fill() error {
	if o.MemBytes < 0 || o.DiskBytes < 0 || o.PrefetchBytes < 0 {
		return errors.New("cache: negative byte size in options")
	}
	if o.MinFreeFraction >= 1 {
		return fmt.Errorf("cache: MinFreeFraction %v must be below 1", o.MinFreeFraction)
	}
	if o.FrontBytes == 0 {
		o.FrontBytes = o.MemBytes / 8
	}
	o.FrontBytes = min(o.FrontBytes, o.MemBytes)
	if o.DiskBytes == 0 {
		o.DiskBytes = DefaultDiskBytes
	}
	if o.MinFreeFraction == 0 {
		o.MinFreeFraction = DefaultMinFreeFraction
	}
	if o.TouchInterval == 0 {
		o.TouchInterval = DefaultTouchInterval
	}
	if o.StaleTempAge == 0 {
		o.StaleTempAge = DefaultStaleTempAge
	}
	if o.RescanInterval == 0 {
		o.RescanInterval = DefaultRescanInterval
	}
	if o.PrefetchWorkers == 0 {
		o.PrefetchWorkers = DefaultPrefetchWorkers
	}
	if o.PrefetchBytes == 0 {
		o.PrefetchBytes = DefaultPrefetchBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.diskSpace == nil {
		o.diskSpace = diskSpace
	}
	if o.now == nil {
		o.now = time.Now
	}
	return nil
}

// Cache is the two-tier cache. Its methods are safe for concurrent use,
// except Close, which must not run concurrently with other calls.
type Cache struct {
	opts    Options
	log     *slog.Logger
	mem     *memTier  // nil: no memory tier
	disk    *diskTier // nil: no disk tier
	ctr     *counters
	flights flight.Group[string, []byte]

	closed  atomic.Bool
	cancel  context.CancelFunc // cancels flights.Base
	closeMu sync.Once

	prefetchQ        chan prefetchJob
	prefetchInFlight atomic.Int64 // reserved bytes of queued and running prefetches
	prefetchWG       sync.WaitGroup
}

// New opens a cache. With Dir set it creates Dir/deltafs-cache-v1 if needed,
// removes temp files of dead writers and indexes the entries already there.
func New(opts Options) (*Cache, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	c := &Cache{opts: opts, log: opts.Logger, ctr: &counters{}}
	var err error
	if c.mem, err = newMemTier(opts.MemBytes, opts.FrontBytes, c.ctr); err != nil {
		return nil, fmt.Errorf("cache: memory tier: %w", err)
	}
	if opts.Dir != "" {
		if c.disk, err = openDisk(opts.Dir, &c.opts, c.ctr, c.log); err != nil {
			c.mem.close()
			return nil, err
		}
	}
	base, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.flights.Base = base
	if opts.PrefetchWorkers > 0 {
		c.prefetchQ = make(chan prefetchJob, 4*opts.PrefetchWorkers)
		for i := 0; i < opts.PrefetchWorkers; i++ {
			c.prefetchWG.Add(1)
			go c.prefetchWorker(base)
		}
	}
	return c, nil
}

// Dir is the directory holding the entry files ("" without a disk tier).
func (c *Cache) Dir() string {
	if c.disk == nil {
		return ""
	}
	return c.disk.root
}

// Get returns key's bytes from memory, else from disk, else by calling fetch
// — once for all concurrent Gets of the key — and storing the result in both
// tiers. A fetch error is returned to every waiting Get and nothing is
// cached. If ctx ends first, Get returns ctx.Err() at once; the fetch goes on
// for the other waiters and is cancelled when none is left.
//
// The returned slice is shared with the cache and other callers: callers may
// keep it as long as they like but must not modify it.
func (c *Cache) Get(ctx context.Context, key Key, fetch FetchFunc) ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	var scratch [256]byte
	text, sum, err := key.digest(scratch[:])
	if err != nil {
		return nil, err
	}
	if v, ok := c.memGet(sum); ok {
		return v, nil
	}
	start := time.Now()
	r := makeRef(text, sum)
	if v, ok := c.diskGet(r, start); ok {
		return v, nil
	}
	v, joined, err := c.flights.Do(ctx, r.sum, func(fctx context.Context) ([]byte, error) {
		return c.fill(fctx, r, fetch)
	})
	if err != nil {
		return nil, err
	}
	if joined {
		c.ctr.shared.Add(1)
	}
	c.ctr.latFetch.observe(time.Since(start))
	return v, nil
}

// memGet looks in the memory tier, counting a hit and timing one lookup in
// memSampleEvery (reading the clock costs a third of a hit).
func (c *Cache) memGet(sum [sha256.Size]byte) ([]byte, bool) {
	if c.mem == nil {
		return nil, false
	}
	var start time.Time
	timed := c.ctr.memLookups.Add(1)%memSampleEvery == 0
	if timed {
		start = time.Now()
	}
	if v, ok := c.mem.get(string(sum[:])); ok {
		c.ctr.memHits.Add(1)
		if timed {
			c.ctr.latMem.observe(time.Since(start))
		}
		return v, true
	}
	c.ctr.memMisses.Add(1)
	return nil, false
}

// diskGet looks in the disk tier, counting and timing a hit, and offers a
// hit to the memory tier.
func (c *Cache) diskGet(r ref, start time.Time) ([]byte, bool) {
	if c.disk == nil {
		return nil, false
	}
	if v, ok := c.disk.get(r); ok {
		c.ctr.diskHits.Add(1)
		c.mem.set(r.sum, v)
		c.ctr.latDisk.observe(time.Since(start))
		return v, true
	}
	c.ctr.diskMisses.Add(1)
	return nil, false
}

// fill runs once per key at a time (see flight.Group).
func (c *Cache) fill(ctx context.Context, r ref, fetch FetchFunc) ([]byte, error) {
	// A fill that finished between our lookup and the start of this one has
	// stored the entry: look again (uncounted) before fetching.
	if v, ok := c.mem.get(r.sum); ok {
		return v, nil
	}
	if c.disk != nil {
		if v, ok := c.disk.get(r); ok {
			c.mem.set(r.sum, v)
			return v, nil
		}
	}
	v, err := c.fetch(ctx, r, fetch)
	if err != nil {
		return nil, err
	}
	if c.disk != nil {
		c.disk.store(r, v)
	}
	c.mem.set(r.sum, v)
	return v, nil
}

// fetch runs fetch for entry r and counts it. A fetch error is returned as
// it is: the fetcher's error names what it read (table, version, file), and
// the entry's key is internal, so it goes to the debug log only.
func (c *Cache) fetch(ctx context.Context, r ref, fetch FetchFunc) ([]byte, error) {
	v, err := callFetch(ctx, c.log, fetch)
	if err != nil {
		c.ctr.fetchErrors.Add(1)
		c.log.Debug("cache: fetch failed", "key", r.text, "err", err)
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	c.ctr.fetches.Add(1)
	c.ctr.fetchedBytes.Add(uint64(len(v)))
	return v, nil
}

// callFetch turns a panicking fetch into an error, so that one bad fetch
// cannot take the mount down. The error is one line; the stack goes to
// the log.
func callFetch(ctx context.Context, log *slog.Logger, fetch FetchFunc) (v []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("cache: fetch panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: fetch panicked: %v", p)
		}
	}()
	return fetch(ctx)
}

// Peek returns key's bytes if either tier has them, without fetching. The
// slice is shared as with Get.
func (c *Cache) Peek(key Key) ([]byte, bool) {
	if c.closed.Load() {
		return nil, false
	}
	var scratch [256]byte
	text, sum, err := key.digest(scratch[:])
	if err != nil {
		return nil, false
	}
	if v, ok := c.memGet(sum); ok {
		return v, true
	}
	return c.diskGet(makeRef(text, sum), time.Now())
}

// Locate returns where key's payload lies on disk: length n bytes starting
// at the 4 KiB-aligned offset off in the file at path (absolute), for readers
// that bypass the page cache (O_DIRECT, GPUDirect Storage). The entry is
// verified completely first. The file stays readable through a descriptor
// opened before an eviction removes it; a path may vanish at any time after
// Locate returns, so open it promptly and treat ENOENT as a miss.
func (c *Cache) Locate(key Key) (path string, off, n int64, ok bool) {
	if c.disk == nil || c.closed.Load() {
		return "", 0, 0, false
	}
	r, err := key.ref()
	if err != nil {
		return "", 0, 0, false
	}
	return c.disk.locate(r)
}

// Close stops background work (prefetches are abandoned, running fetches
// cancelled and waited for) and releases the memory tier. The disk entries
// stay for the next process. Close must not be called concurrently with
// other methods; later calls return ErrClosed or miss.
func (c *Cache) Close() error {
	c.closeMu.Do(func() {
		c.closed.Store(true)
		c.cancel()
		c.prefetchWG.Wait()
		c.flights.Wait()
		if c.disk != nil {
			c.disk.close()
		}
		c.mem.close()
	})
	return nil
}
