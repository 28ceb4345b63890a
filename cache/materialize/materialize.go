// Package materialize makes the extents of a shard's samples (package
// extents) in deltafs's disk cache, for package fs to serve: each sample is
// written to the disk cache on demand, as one entry of its own, and its
// extent is where its bytes then lie, with their CRC-32.
//
// Every sample is cached as one entry of its own, keyed by content identity
// (sample.Shard.SampleKey: data file, its size, physical row, and the parts
// of the spec that shape the bytes), so versions and shards that share a
// data file share the entries. An entry's payload starts 4 KiB-aligned in
// its cache file (cache.Cache.Where). Entries are materialised on demand:
// asking for an extent writes the sample to the disk cache if it is not
// there, so an extent is valid as long as its entry lives; after an
// eviction, asking again writes the entry again, at the same path and
// offset.
//
// Two ways out, served by package fs:
//
//   - the extended attribute extents.XattrName on a sample file (mount flag
//     --xattrs), whose value is extents.Extent's text form
//     PATH<TAB>OFFSET<TAB>LENGTH<TAB>CRC32;
//   - the per-shard extent list extents.ListName (_extents.tsv), one line
//     per sample. Reading it materialises every sample of the shard:
//     reading it warms the shard in the disk cache.
//
// Every extent carries the CRC-32 of the bytes in its cache entry
// (extents.Checksum), computed when materialising from an entry verified
// whole (cache.Cache.Materialize), so that readers that bypass FUSE, and
// with it the cache's own xxhash checks, can tell a damaged or replaced
// cache file from the sample: they treat a mismatch as a miss.
package materialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/sample"
)

// Source produces extents from a cache with a disk tier. Safe for
// concurrent use.
type Source struct {
	c        *cache.Cache
	table    string
	log      *slog.Logger
	parallel int
}

// New returns a Source over c, whose keys carry table (the table location,
// as the mount's other cache keys do). c must have a disk tier. log gets
// samples an extent list could not materialise (nil: slog.Default()).
func New(c *cache.Cache, table string, log *slog.Logger) (*Source, error) {
	if c == nil || c.Dir() == "" {
		return nil, errors.New("extents need a disk cache (not --cache-dir none)")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Source{c: c, table: table, log: log, parallel: max(2, min(8, 2*runtime.GOMAXPROCS(0)))}, nil
}

// XattrName is the extended attribute carrying a sample's extent.
func (s *Source) XattrName() string { return extents.XattrName }

// ListName is the per-shard extent list's file name.
func (s *Source) ListName() string { return extents.ListName }

func (s *Source) key(sh *sample.Shard, pos int) (cache.Key, error) {
	k, err := sh.SampleKey(pos)
	if err != nil {
		return cache.Key{}, err
	}
	// Completed with the table as the table's cache handle completes
	// the sample layer's keys (table/cachehandle.go).
	return cache.KeyIn(s.table, k), nil
}

// sampleErr names the sample an error is about.
func sampleErr(sh *sample.Shard, pos int, err error) error {
	return fmt.Errorf("%s, sample %s: extent: %w", sh, sh.Path(pos), err)
}

// Extent materialises the sample at pos in the disk cache if needed and
// returns where its bytes lie, with the CRC-32 of the bytes in the entry
// (cache.Cache.Materialize verifies the entry whole, rewriting a broken
// one, and computes it in the same pass).
func (s *Source) Extent(ctx context.Context, sh *sample.Shard, pos int) (extents.Extent, error) {
	k, err := s.key(sh, pos)
	if err != nil {
		return extents.Extent{}, sampleErr(sh, pos, err)
	}
	e, err := s.c.Materialize(ctx, k, func(ctx context.Context) ([]byte, error) {
		return sh.Content(ctx, pos)
	})
	if err != nil {
		return extents.Extent{}, sampleErr(sh, pos, err)
	}
	if want := sh.Size(pos); e.Length != want {
		return extents.Extent{}, sampleErr(sh, pos, fmt.Errorf("cached entry %s holds %d bytes, the sample has %d", e.Path, e.Length, want))
	}
	return e, nil
}

// Xattr is the value of XattrName for the sample at pos: its extent's text
// form, after materialising it. A sample the disk cache cannot keep (larger
// than the budget, no free space) has no extent: the error wraps ENODATA,
// so that getxattr says "no such attribute" and loaders read the file.
func (s *Source) Xattr(ctx context.Context, sh *sample.Shard, pos int) ([]byte, error) {
	e, err := s.Extent(ctx, sh, pos)
	if errors.Is(err, cache.ErrNotStored) {
		s.log.Warn("extents: sample not kept in the disk cache; its xattr reports no extent", "err", err)
		return nil, fmt.Errorf("%w: %w", syscall.ENODATA, err)
	}
	if err != nil {
		return nil, err
	}
	return e.MarshalText()
}

// predicted is the extent the sample at pos has once materialised, from
// its key and size alone; its checksum is unknown.
func (s *Source) predicted(sh *sample.Shard, pos int) (extents.Extent, error) {
	k, err := s.key(sh, pos)
	if err != nil {
		return extents.Extent{}, sampleErr(sh, pos, err)
	}
	p, off, ok, err := s.c.Where(k)
	if err == nil && !ok {
		err = cache.ErrNotStored
	}
	if err != nil {
		return extents.Extent{}, sampleErr(sh, pos, err)
	}
	return extents.Extent{Path: p, Offset: off, Length: sh.Size(pos)}, nil
}

// List is the content of the shard's extent list: every sample in shard
// order, its path relative to the shard directory, its extent and its
// checksum, in the format of extents.WriteList. With materialize false it
// only computes the list's shape, without I/O (an entry's place depends on
// its key alone), every checksum unknown: this is for the file's size,
// which the fixed-width checksum field keeps equal to the materialised
// list's. With materialize true it first makes sure every sample is in
// the disk cache, whole and correct (several at a time; an entry already
// there is read and verified, a missing or broken one is written), and
// lists each with the CRC-32 of the bytes in its entry.
//
// Like the mount, an extent list fails only for what is broken: samples of a
// data file already known to be unreadable (sample.Shard.Err) are left out;
// a sample that fails to materialise now (its data file vanished, its entry
// is larger than the cache budget) keeps its line, with an unknown checksum
// and a cache file that is then missing, and is logged with its version,
// shard, data file and cause; loaders read it through the mount, where it
// fails or works on its own. Only a cancelled request fails the list.
//
// A shard larger than the disk budget cannot be held whole: materialising
// its last samples evicts its first ones, whose extents are then stale.
// Readers must treat a missing, short or checksum-failing cache extent as a
// miss (gds.Reader and examples/gds/loader.py read the list again, then
// fall back to the sample file).
func (s *Source) List(ctx context.Context, sh *sample.Shard, materialize bool) ([]byte, error) {
	n := sh.Len()
	entries := make([]extents.Entry, 0, n)
	positions := make([]int, 0, n)
	for pos := range n {
		e, err := s.predicted(sh, pos)
		if err != nil {
			return nil, err
		}
		entries = append(entries, extents.Entry{Sample: sh.Path(pos), Extent: e})
		positions = append(positions, pos)
	}
	if materialize {
		var (
			mu     sync.Mutex
			failed int
			first  error
		)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(s.parallel)
		for i, pos := range positions {
			g.Go(func() error {
				got, err := s.Extent(gctx, sh, pos)
				want := entries[i].Extent
				if err == nil && (got.Path != want.Path || got.Offset != want.Offset || got.Length != want.Length) {
					err = sampleErr(sh, pos, fmt.Errorf("materialised at %s, predicted %s", got, want))
				}
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					mu.Lock()
					failed++
					if first == nil {
						first = err
					}
					mu.Unlock()
					return nil
				}
				entries[i].Sum = got.Sum // each goroutine writes its own entry
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		if failed > 0 {
			s.log.Error("extents: samples not materialised in the disk cache; the extent list names them without a checksum, loaders will read them through the mount",
				"shard", sh.String(), "failed", failed, "first", first)
		}
	}
	var b bytes.Buffer
	if err := extents.WriteList(&b, entries); err != nil {
		return nil, fmt.Errorf("%s: %w", sh, err)
	}
	return b.Bytes(), nil
}
