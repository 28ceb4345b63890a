package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/table"
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
	Where          string
}

func (o *specFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.IDColumn, "id-column", "", "column naming the sample files (default: id, when the table has it; else <hash of data file>-<row>)")
	f.StringVar(&o.DataColumn, "data-column", "", "column holding each sample's bytes (default: the table's only binary column, else none); \"-\": none, each sample is its row as JSON")
	f.StringVar(&o.Image, "image", "", "the data column holds raw uint8 pixels of shape HxW[xC]: encode each as an image")
	f.StringVar(&o.ImageFormat, "image-format", "", "image encoding with --image: png (default) or pnm (PGM/PPM)")
	f.StringVar(&o.ClassColumn, "class-column", "", "put samples in class folders named by this column (ImageFolder layout)")
	f.IntVar(&o.Shards, "shards", 1, "split every version into this many shards of equal size (within one sample)")
	f.StringVar(&o.Layout, "shard-layout", "", "how rows are split into shards: balanced (each class dealt across every shard; the default with --class-column) or contiguous (ranges of rows in append order, each shard reading about 1/S of the data files; the default without)")
	f.StringVar(&o.Where, "where", "", whereHelp)
	f.BoolVar(&o.SkipUnreadable, "skip-unreadable", false, "leave out the samples of data files that cannot be read, with a warning, instead of failing the shards that need them (EIO)")
}

func (o *specFlags) spec() (sample.Spec, error) {
	s := sample.Spec{IDColumn: o.IDColumn, DataColumn: o.DataColumn, ImageFormat: o.ImageFormat, ClassColumn: o.ClassColumn, Shards: o.Shards,
		Layout: o.Layout, SkipUnreadable: o.SkipUnreadable}
	var err error
	if s.Where, err = parseWhere(o.Where); err != nil {
		return s, err
	}
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

// whereHelp is the help of --where (mount, warm, cat, log).
const whereHelp = "only the rows for which this SQL condition is true, e.g. \"split = 'train' AND score >= 0.8\" (comparisons, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT over columns and literals); data files whose partition values or statistics exclude it are never read"

// parseWhere parses a --where condition ("" : none, nil), the one place
// the command line parses one (mount, warm, cat, log); its callers make a
// malformed one a usage error.
func parseWhere(s string) (*filter.Expr, error) {
	if s == "" {
		return nil, nil
	}
	return filter.Parse(s)
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

// cacheError says which flag to give instead when the cache's directory
// cannot be used; other errors are returned as they are.
func (o *cacheFlags) cacheError(err error) error {
	var de *cache.DirError
	if !errors.As(err, &de) {
		return err
	}
	if o.CacheDir == "" {
		return fmt.Errorf("the default disk cache directory cannot be used: %v; give a writable --cache-dir DIR, or --cache-dir none for no disk cache", err)
	}
	return fmt.Errorf("--cache-dir %s: %v; give a writable directory, or --cache-dir none for no disk cache", o.CacheDir, err)
}

// stack is what mount and warm read a table through (package table), with
// what the command line adds: the cache flags as given, and warm's ledger.
type stack struct {
	*table.Table
	cacheDir string     // the disk cache directory (--cache-dir, resolved)
	budget   int64      // the disk cache's byte budget (--cache-size)
	ledger   warmLedger // what a warm pass read through the cache
}

// openStack checks the flags, opens the table with them (package table:
// it opens, lists, and its latest version can be read and fits the spec)
// and checks --image against the data (sample.Version.CheckImage). Errors in the
// flags are usageErrors.
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
	s := &stack{cacheDir: cacheOpts.Dir, budget: cacheOpts.DiskBytes}
	s.Table, err = table.Open(ctx, table.Options{Location: location, Storage: global.storage, Spec: &spec, Cache: cacheOpts,
		ReadAhead: cf.ReadAheadPages, OnCacheRead: s.ledger.add})
	if err != nil {
		return nil, cf.cacheError(err)
	}
	latest, err := s.Samples.Version(ctx, s.Latest.Version)
	if err == nil {
		err = checkImage(ctx, location, latest)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkImage checks --image against the version's data
// (sample.Version.CheckImage), its error as one line.
func checkImage(ctx context.Context, location string, ver *sample.Version) error {
	err := ver.CheckImage(ctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return fileErrorLine(location, err)
}
