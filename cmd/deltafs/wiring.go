package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// specFlags are the sample-spec flags shared by mount and warm.
type specFlags struct {
	IDColumn       string
	DataColumn     string
	Image          string
	ImageFormat    string
	ClassColumn    string
	Shards         int
	Layout         string
	SkipUnreadable bool
}

func (o *specFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.IDColumn, "id-column", "", "column naming the sample files (default: id, when the table has it; else <hash of data file>-<row>)")
	f.StringVar(&o.DataColumn, "data-column", "", "column holding each sample's bytes (default: the table's only binary column, else none); \"-\": none, each sample is its row as JSON")
	f.StringVar(&o.Image, "image", "", "the data column holds raw uint8 pixels of shape HxW[xC]: encode each as an image")
	f.StringVar(&o.ImageFormat, "image-format", "", "image encoding with --image: png (default) or pnm (PGM/PPM)")
	f.StringVar(&o.ClassColumn, "class-column", "", "put samples in class folders named by this column (ImageFolder layout)")
	f.IntVar(&o.Shards, "shards", 1, "split every version into this many shards of equal size (within one sample)")
	f.StringVar(&o.Layout, "shard-layout", "", "how rows are split into shards: balanced (each class dealt across every shard; the default with --class-column) or contiguous (ranges of rows in append order, each shard reading about 1/S of the data files; the default without)")
	f.BoolVar(&o.SkipUnreadable, "skip-unreadable", false, "leave out the samples of data files that cannot be read, with a warning, instead of failing the shards that need them (EIO)")
}

func (o *specFlags) spec() (sample.Spec, error) {
	s := sample.Spec{IDColumn: o.IDColumn, DataColumn: o.DataColumn, ImageFormat: o.ImageFormat, ClassColumn: o.ClassColumn, Shards: o.Shards,
		Layout: o.Layout, SkipUnreadable: o.SkipUnreadable}
	if o.Image != "" {
		im, err := sample.ParseImage(o.Image)
		if err != nil {
			return s, fmt.Errorf("--image: %w", err)
		}
		s.Image = im
	}
	if o.Shards < 1 {
		return s, fmt.Errorf("--shards %d: want at least 1", o.Shards)
	}
	return s, s.Validate()
}

// cacheFlags are the cache and read-ahead flags shared by mount and warm.
type cacheFlags struct {
	MemCache       string
	CacheDir       string
	CacheSize      string
	ReadAheadPages int
	ReadAheadBytes string
	ReadAheadReads int
	Fsync          bool
}

func (o *cacheFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.MemCache, "mem-cache", "256MiB", "memory cache for decoded Parquet pages (0: none)")
	f.StringVar(&o.CacheDir, "cache-dir", "", `disk cache directory, kept across mounts (default: the user cache directory's deltafs, e.g. ~/.cache/deltafs; "none": no disk cache)`)
	f.StringVar(&o.CacheSize, "cache-size", humanize.IBytes(cache.DefaultDiskBytes), "disk cache budget, more than 0 (for no disk cache: --cache-dir none; an entry takes 8 KiB at least)")
	f.IntVar(&o.ReadAheadPages, "read-ahead", 4, "pages read ahead of a shard's reads in the same data file (0: none)")
	f.StringVar(&o.ReadAheadBytes, "read-ahead-bytes", humanize.IBytes(cache.DefaultPrefetchBytes), "bound on the bytes of read-ahead in flight (0: no read-ahead)")
	f.IntVar(&o.ReadAheadReads, "read-ahead-reads", cache.DefaultPrefetchWorkers, "bound on the concurrent read-ahead reads (0: no read-ahead)")
	f.BoolVar(&o.Fsync, "cache-fsync", false, "fsync each disk cache entry before it appears (a power loss then keeps just-written entries; without it a torn entry fails its checksum and is fetched again)")
}

// options turns the flags into cache options, all but the directory (see
// dir). Errors are about the flags: usage errors for the caller.
func (o *cacheFlags) options() (cache.Options, error) {
	memBytes, err := parseSize("--mem-cache", o.MemCache)
	if err != nil {
		return cache.Options{}, err
	}
	diskBytes, err := parseSize("--cache-size", o.CacheSize)
	if err != nil {
		return cache.Options{}, err
	}
	if o.CacheDir != "none" && diskBytes == 0 {
		// The cache package reads 0 as its default (10 GiB): never that
		// silently.
		return cache.Options{}, fmt.Errorf("--cache-size %s: a disk cache needs room; use --cache-dir none for no disk cache", o.CacheSize)
	}
	raBytes, err := parseSize("--read-ahead-bytes", o.ReadAheadBytes)
	if err != nil {
		return cache.Options{}, err
	}
	if o.ReadAheadPages < 0 || o.ReadAheadReads < 0 {
		return cache.Options{}, errors.New("--read-ahead and --read-ahead-reads must not be negative")
	}
	opts := cache.Options{MemBytes: memBytes, DiskBytes: diskBytes, PrefetchBytes: raBytes, PrefetchWorkers: o.ReadAheadReads,
		// Every read verifies the entry's checksums: durability is all
		// that fsync adds, and a lost entry is only a miss.
		SkipFsync: !o.Fsync}
	if o.ReadAheadReads == 0 || o.ReadAheadPages == 0 {
		opts.PrefetchWorkers = -1
	}
	if raBytes == 0 {
		opts.PrefetchWorkers = -1
		opts.PrefetchBytes = 0
	}
	if o.CacheDir != "none" {
		opts.Dir = o.CacheDir // "" until openStack resolves the default (dir)
	}
	return opts, nil
}

// dir is the disk cache directory: --cache-dir, else the default; "" for
// none. Not finding a default is not a usage error (exit 1).
func (o *cacheFlags) dir() (string, error) {
	switch o.CacheDir {
	case "none":
		return "", nil
	case "":
		d, err := cache.DefaultDir()
		if err != nil {
			return "", fmt.Errorf("no default disk cache directory (%v): give --cache-dir DIR, or --cache-dir none for no disk cache", err)
		}
		return d, nil
	}
	return o.CacheDir, nil
}

// openCache opens the cache the flags describe; a directory that cannot be
// used says which flag to give instead.
func (o *cacheFlags) openCache(opts cache.Options) (*cache.Cache, error) {
	c, err := cache.New(opts)
	var de *cache.DirError
	if errors.As(err, &de) {
		if o.CacheDir == "" {
			return nil, fmt.Errorf("the default disk cache directory cannot be used: %v; give a writable --cache-dir DIR, or --cache-dir none for no disk cache", err)
		}
		return nil, fmt.Errorf("--cache-dir %s: %v; give a writable directory, or --cache-dir none for no disk cache", o.CacheDir, err)
	}
	return c, err
}

// stack is what mount and warm read a table through: counted storage, the
// table, the two-tier cache, the page fetcher and the sample layer.
type stack struct {
	location string
	st       storage.Storage
	counted  *countingStorage
	table    *snapshot.Table
	versions []snapshot.VersionInfo
	latest   *snapshot.Snapshot
	describe string
	cacheDir string
	budget   int64 // the disk cache's byte budget (--cache-size)
	pages    *cache.Cache
	ledger   warmLedger // what a warm pass read through the cache
	fetcher  *sample.PageFetcher
	samples  *sample.Samples
}

// Close releases the storage and the cache (its disk entries stay). The
// storage goes first: cache fills still waiting on it then fail at once
// instead of holding Close until their retries end.
func (s *stack) Close() error {
	err := s.closeStorage()
	return errors.Join(err, s.pages.Close())
}

// closeStorage closes the storage when it is closable (the S3 store:
// requests in flight fail at once, connections close); later reads fail.
func (s *stack) closeStorage() error {
	if c, ok := s.st.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// openStack checks the flags and the table (it opens, lists, and its latest
// version can be read and fits the spec, --image included: see
// checkImageShape) and builds the read stack. Errors in
// the flags are usageErrors.
func openStack(ctx context.Context, location string, sf *specFlags, cf *cacheFlags) (*stack, error) {
	spec, err := sf.spec()
	if err != nil {
		return nil, usageError{err}
	}
	cacheOpts, err := cf.options()
	if err != nil {
		return nil, usageError{err}
	}
	if cacheOpts.Dir, err = cf.dir(); err != nil {
		return nil, err
	}
	if !strings.Contains(location, "://") {
		if _, err := os.Stat(location); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such table: the directory does not exist", location)
		}
	}
	st, err := storage.Open(ctx, location, global.storage)
	if err != nil {
		return nil, err
	}
	s := &stack{location: location, st: st, counted: &countingStorage{Storage: st}, cacheDir: cacheOpts.Dir, budget: cacheOpts.DiskBytes}
	if s.table, err = snapshot.Open(ctx, s.counted); err != nil {
		return nil, withLocation(location, err)
	}
	if s.versions, err = s.table.Versions(ctx); err != nil {
		return nil, withLocation(location, err)
	}
	if len(s.versions) == 0 {
		return nil, fmt.Errorf("%s: the table has no readable version", location)
	}
	if s.latest, err = s.table.Snapshot(ctx, s.versions[len(s.versions)-1].Version); err != nil {
		return nil, withLocation(location, err)
	}
	if s.describe, err = spec.Describe(s.latest); err != nil {
		return nil, fmt.Errorf("%s version %d: %w", location, s.latest.Version, err)
	}
	rows, err := newRows(s.table)
	if err != nil {
		return nil, err
	}
	if s.pages, err = cf.openCache(cacheOpts); err != nil {
		return nil, err
	}
	blobs := cacheAdapter{c: s.pages, table: st.Location(), ledger: &s.ledger}
	ra := cf.ReadAheadPages
	if cacheOpts.PrefetchWorkers < 0 {
		ra = 0
	}
	_, coalesce := st.(storage.RangeReader)
	s.fetcher = sample.NewPageFetcher(s.counted, sample.PageFetcherOptions{Cache: blobs, ReadAhead: ra, Coalesce: coalesce})
	s.samples, err = sample.New(sample.Options{Table: s.table, Rows: rows, Fetcher: s.fetcher, Spec: spec, Cache: blobs,
		OnIndexed: returnIndexGarbage})
	if err != nil {
		s.pages.Close()
		return nil, usageError{err}
	}
	if err := checkImageShape(ctx, location, sf, s.fetcher, s.latest); err != nil {
		s.pages.Close()
		return nil, err
	}
	return s, nil
}

// withLocation prefixes err with the table location unless it names it.
func withLocation(location string, err error) error {
	if strings.Contains(err.Error(), location) {
		return err
	}
	return fmt.Errorf("%s: %w", location, err)
}

// cacheAdapter makes the two-tier cache the sample layer's BlobCache.
type cacheAdapter struct {
	c      *cache.Cache
	table  string
	ledger *warmLedger // records what is read once started (warm)
}

func (a cacheAdapter) key(k sample.CacheKey) cache.Key {
	return cache.Key{Kind: k.Kind, Table: a.table, File: k.File, Version: k.Version, Column: k.Column, Unit: k.Unit}
}

func (a cacheAdapter) Get(ctx context.Context, k sample.CacheKey, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	key := a.key(k)
	v, err := a.c.Get(ctx, key, fetch)
	if err == nil {
		a.ledger.add(key, len(v))
	}
	return v, err
}

// Prefetch implements sample.Prefetcher: read-ahead, bounded by the cache's
// prefetch budget.
func (a cacheAdapter) Prefetch(k sample.CacheKey, size int64, fetch func(context.Context) ([]byte, error)) bool {
	return a.c.Prefetch(a.key(k), size, fetch)
}

// countingStorage counts what is read from the table's storage: all reads,
// and separately those of data files (everything outside _delta_log/: Parquet
// files, deletion vectors), whoever reads them (page fetches, index scans).
type countingStorage struct {
	storage.Storage
	bytes, reads         atomic.Int64
	dataBytes, dataReads atomic.Int64
}

func isLogKey(key string) bool {
	return strings.HasPrefix(key, "_delta_log/") || strings.Contains(key, "/_delta_log/")
}

func (c *countingStorage) count(key string, n int64) {
	c.bytes.Add(n)
	c.reads.Add(1)
	if !isLogKey(key) {
		c.dataBytes.Add(n)
		c.dataReads.Add(1)
	}
}

func (c *countingStorage) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	n, err := c.Storage.ReadAt(ctx, key, p, off)
	c.count(key, int64(n))
	return n, err
}

// ReadRanges forwards to the store's range reader (one coalescing request
// on S3), else reads each range; storage.ReadRanges finds it.
func (c *countingStorage) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	out, err := storage.ReadRanges(ctx, c.Storage, key, ranges)
	var n int64
	for _, b := range out {
		n += int64(len(b))
	}
	c.count(key, n)
	return out, err
}

// returnIndexGarbage gives the memory a large index build churned through
// back to the system (a full collection, in the background): the Go
// runtime would otherwise keep it for minutes, and a mount of millions of
// samples would look (and count) several times its size.
func returnIndexGarbage(samples int) {
	if samples >= 100_000 {
		go debug.FreeOSMemory()
	}
}
