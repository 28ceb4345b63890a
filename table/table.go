package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Options say which table to open and how to read it.
type Options struct {
	// Location is the table: a local path or a URL (s3://bucket/path).
	Location string
	// Storage configures the store of Location: for each cloud, the
	// endpoint, the request timeout, the retries and the circuit breaker
	// (DownAfter).
	Storage storage.Options
	// Store, when set, is read instead of opening Location (tests,
	// benchmarks); Close closes it when it is an io.Closer.
	Store storage.Storage

	// Spec says what a sample file holds. Nil: Open stops after the log
	// (no cache, no sample layer), for readers of rows (cat, log).
	Spec *sample.Spec
	// Cache configures the two-tier cache (Dir "": no disk tier).
	Cache cache.Options
	// ReadAhead is how many pages a shard's reader reads ahead in the same
	// data file (0: none; none either when Cache.PrefetchWorkers < 0).
	ReadAhead int
	// OnCacheRead, when set, is told of every entry read through the
	// cache, with its length (`deltafs warm` records what a pass needs).
	OnCacheRead func(k cache.Key, n int)
}

// Table is an open table: the layers of its read stack, bottom up. Fields
// after Log are set only when Options.Spec was.
type Table struct {
	// Location is Options.Location.
	Location string
	// Store is the storage as opened, without the counting decorator
	// (its Location for cache keys and mount names; the S3 store's Stats).
	Store storage.Storage
	// Log is the table's Delta log, read through the counting decorator.
	Log *snapshot.Log

	// Versions are the readable versions at Open, oldest first.
	Versions []snapshot.VersionInfo
	// Latest is the snapshot of the last of Versions.
	Latest *snapshot.Snapshot
	// Describe is the sample spec as it applies to Latest (for logs).
	Describe string
	// Cache is the two-tier cache; its disk entries outlive Close.
	Cache *cache.Cache
	// Fetcher reads values from data files, page by page, through Cache.
	Fetcher *page.Fetcher
	// Samples is the sample layer.
	Samples *sample.Samples

	counted *countingStorage
}

// Counts are what was read from the table's storage so far.
func (t *Table) Counts() Counts { return t.counted.counts() }

// InFlight is how many calls to the table's storage (lists, stats, reads)
// are in progress: after the storage is closed (CloseStorage), the ones
// stuck where no context reaches (a read blocked in the kernel).
func (t *Table) InFlight() int64 { return t.counted.inFlight.Load() }

// Open opens the table at opts.Location (or opts.Store). With a Spec it
// also checks that the table has a readable version, builds the cache,
// the page fetcher and the sample layer, and checks that its latest
// version fits the spec (sample.Version.Describe). Errors name the location; an error of
// the cache's directory is a *cache.DirError.
func Open(ctx context.Context, opts Options) (*Table, error) {
	st := opts.Store
	if st == nil {
		if opts.Spec != nil && !strings.Contains(opts.Location, "://") && !storage.Claimed(opts.Location) {
			if _, err := os.Stat(opts.Location); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s: no such table: the directory does not exist", opts.Location)
			}
		}
		var err error
		if st, err = storage.Open(ctx, opts.Location, opts.Storage); err != nil {
			return nil, err
		}
	}
	t := &Table{Location: opts.Location, Store: st, counted: &countingStorage{Storage: st}}
	var err error
	var logOpts snapshot.Options
	if cl, ok := st.(storage.CatalogLog); ok {
		logOpts.CatalogManaged, logOpts.CatalogManagedHint = cl.CatalogLog()
	}
	if t.Log, err = snapshot.OpenWithOptions(ctx, t.counted, logOpts); err != nil {
		_ = t.Close()
		if opts.Spec == nil {
			return nil, err
		}
		return nil, WithLocation(opts.Location, err)
	}
	if opts.Spec == nil {
		return t, nil
	}
	if err := t.openSamples(ctx, opts); err != nil {
		_ = t.Close()
		return nil, err
	}
	return t, nil
}

// openSamples opens the layers above the log.
func (t *Table) openSamples(ctx context.Context, opts Options) error {
	location := opts.Location
	var err error
	if t.Versions, err = t.Log.Versions(ctx); err != nil {
		return WithLocation(location, err)
	}
	if len(t.Versions) == 0 {
		return fmt.Errorf("%s: the table has no readable version", location)
	}
	if t.Latest, err = t.Log.Snapshot(ctx, t.Versions[len(t.Versions)-1].Version); err != nil {
		return WithLocation(location, err)
	}
	rows, err := sample.ScanRows(t.Log)
	if err != nil {
		return err
	}
	if t.Cache, err = cache.New(opts.Cache); err != nil {
		return err
	}
	blobs := cacheHandle{c: t.Cache, table: t.Store.Location(), onRead: opts.OnCacheRead}
	ra := opts.ReadAhead
	if opts.Cache.PrefetchWorkers < 0 {
		ra = 0
	}
	_, coalesce := t.Store.(storage.RangeReader)
	t.Fetcher = page.NewFetcher(t.counted, page.Options{Cache: blobs, ReadAhead: ra, Coalesce: coalesce,
		SpillAbove: spillAbove(opts.Cache.MemBytes), SpillDir: opts.Cache.Dir})
	if t.Samples, err = sample.New(sample.Options{Table: t.Log, Rows: rows, Fetcher: t.Fetcher, Spec: *opts.Spec, Cache: blobs,
		OnIndexed: returnIndexGarbage}); err != nil {
		return err
	}
	latest, err := t.Samples.Version(ctx, t.Latest.Version)
	if err != nil {
		return WithLocation(location, err)
	}
	if t.Describe, err = latest.Describe(); err != nil {
		return fmt.Errorf("%s version %d: %w", location, t.Latest.Version, err)
	}
	return nil
}

// spillAbove is the page size past which the fetcher spills a page to a
// file (page.Options.SpillAbove): what the memory tier does
// not keep for certain (its strict front, an eighth of it), at least 1 MiB.
func spillAbove(memBytes int64) int64 { return max(memBytes/8, 1<<20) }

// Close releases the storage and the cache (its disk entries stay). The
// storage goes first: cache fills still waiting on it then fail at once
// instead of holding Close until their retries end.
func (t *Table) Close() error {
	err := t.CloseStorage()
	if t.Cache != nil {
		err = errors.Join(err, t.Cache.Close())
	}
	return err
}

// CloseStorage closes the storage when it is closable (the S3 store:
// requests in flight fail at once, connections close); later reads fail.
func (t *Table) CloseStorage() error {
	if c, ok := t.Store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// withLocation prefixes err with the table location unless it names it.
func WithLocation(location string, err error) error {
	if strings.Contains(err.Error(), location) {
		return err
	}
	return fmt.Errorf("%s: %w", location, err)
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
