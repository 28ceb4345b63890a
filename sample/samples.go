package sample

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// Table is what the sample layer needs of a Delta table; *snapshot.Log
// implements it.
type Table interface {
	// Versions lists the readable versions, oldest first, listing the log
	// again to find new commits.
	Versions(ctx context.Context) ([]snapshot.VersionInfo, error)
	// Snapshot returns the table at a version.
	Snapshot(ctx context.Context, version int64) (*snapshot.Snapshot, error)
	// VersionAt returns the latest version committed at or before ts.
	VersionAt(ctx context.Context, ts time.Time) (int64, error)
}

// Rows decodes the live rows of data files (the scan package behind a
// small interface, so that the sample layer can be tested without Parquet).
type Rows interface {
	// Columns calls fn for the live rows of f, a data file of snap, in
	// physical order, a batch at a time: their physical indexes in the
	// file and the values of columns (logical names; partition columns
	// included) as typed vectors (scan.Batch, as scan.Scan.FileColumns
	// gives them), valid only during the call.
	Columns(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(b *scan.Batch) error) error
	// ScanJSON calls fn for each live row of f with the row rendered as one
	// JSON object, exactly as `deltafs cat` prints it (no newline).
	ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(row int64, json []byte)) error
}

// Fetcher reads single values of a data file: the data column of one row.
// page.Fetcher is the Parquet implementation (page-level access through the
// offset index, pages cached).
type Fetcher interface {
	// Value returns the bytes of the physical column at a physical row of
	// f; nil for a null. The slice is shared and must not be modified.
	Value(ctx context.Context, f page.FileRef, column string, row int64) ([]byte, error)
	// Values calls fn with the value of the physical column at every
	// physical row of f, in order (nil for a null); the slice is valid
	// during the call.
	Values(ctx context.Context, f page.FileRef, column string, fn func(row int64, v []byte) error) error
	// NumRows is the physical row count of f from its footer.
	NumRows(ctx context.Context, f page.FileRef) (int64, error)
	// Identify returns f with its store identity (page.FileRef.ID) filled in:
	// one Stat of the object, once per process.
	Identify(ctx context.Context, f page.FileRef) (page.FileRef, error)
}

// RangeFetcher is a Fetcher that reads part of a value (page.Fetcher), so
// that a read of a range of a large sample costs that range.
type RangeFetcher interface {
	// ValueAt reads bytes [off, off+len(p)) of the value into p: the
	// count read, 0 at or past its end (and for a null).
	ValueAt(ctx context.Context, f page.FileRef, column string, row int64, p []byte, off int64) (int, error)
	// Heads is Values giving each value's size and its first bytes (up
	// to max) instead of the whole value: what indexing a shard of
	// samples too large for memory needs (page.Fetcher decodes their pages
	// as a stream, never whole in memory).
	Heads(ctx context.Context, f page.FileRef, column string, max int, fn func(row, size int64, head []byte) error) error
	// Head is Value's size and first bytes, as Heads gives them.
	Head(ctx context.Context, f page.FileRef, column string, row int64, max int) (size int64, head []byte, err error)
}

// Options configure a Samples.
type Options struct {
	Table   Table
	Rows    Rows
	Fetcher Fetcher
	Spec    Spec
	// Cache holds rendered JSON of whole data files (nil: a 64 MiB
	// page.MemCache).
	Cache page.Cache
	// Logger gets warnings (duplicate ids, unreadable files); nil: default.
	Logger *slog.Logger
	// Location names the table in errors and log lines ("" : the table's
	// own Location() when it has one).
	Location string
	// OnIndexed, when set, is called after a shard's index was built, with
	// its samples (the mount returns the build's garbage to the system
	// after a large one).
	OnIndexed func(samples int)
	// Parallel bounds the data files indexed at once (0: 4).
	Parallel int
	// KeepVersions is how many recently used versions stay indexed even
	// when nothing references them (0: 8).
	KeepVersions int
	// FileKey resolves a data file path of the log to its storage key
	// (nil: Snapshot.FileKey).
	FileKey func(snap *snapshot.Snapshot, path string) (string, error)
}

// Samples maps every version of a table to sample files, lazily: a
// version's snapshot is built on first use, a shard's index when the shard
// is first listed or looked up, and per-data-file metadata is shared by all
// versions (and shards) that reference the same file.
type Samples struct {
	opts Options
	log  *slog.Logger

	versions memo[int64, Version]
	files    memo[string, fileSamples]
	widths   memo[string, classRange]
	rendered *page.MemCache // encoded images, so a sample read in pieces is encoded once

	mu     sync.Mutex
	recent []*Version // guarded by mu; strong references to recently used versions

	ctr Counters

	warnMu sync.Mutex
	warned map[string]bool // guarded by warnMu; warnOnce keys
}

// location names the table in errors.
func (s *Samples) location() string { return s.opts.Location }

// warnOnce logs a warning the first time key is seen.
func (s *Samples) warnOnce(key, msg string, args ...any) {
	s.warnMu.Lock()
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	seen := s.warned[key]
	s.warned[key] = true
	s.warnMu.Unlock()
	if !seen {
		s.log.Warn(msg, args...)
	}
}

// Counters count the sample layer's work; read them with Stats.
type Counters struct {
	FilesIndexed   atomic.Int64 // data files whose sample metadata was built
	FilesFromCache atomic.Int64 // data files whose sample metadata came from the cache
	SamplesIndexed atomic.Int64 // samples in those files
	IndexBytes     atomic.Int64 // estimated memory of that metadata
	IndexNanos     atomic.Int64 // time spent building shard indexes
	Reads          atomic.Int64 // sample reads served
	ReadErrors     atomic.Int64 // sample reads failed
}

// New returns the sample layer over a table.
func New(opts Options) (*Samples, error) {
	if opts.Table == nil || opts.Rows == nil || opts.Fetcher == nil {
		return nil, errors.New("sample: Table, Rows and Fetcher are required")
	}
	if err := opts.Spec.Validate(); err != nil {
		return nil, err
	}
	if opts.Cache == nil {
		opts.Cache = page.NewMemCache(64 << 20)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if opts.KeepVersions <= 0 {
		opts.KeepVersions = 8
	}
	if opts.Location == "" {
		if l, ok := opts.Table.(interface{ Location() string }); ok {
			opts.Location = l.Location()
		}
	}
	if opts.FileKey == nil {
		opts.FileKey = func(snap *snapshot.Snapshot, path string) (string, error) { return snap.FileKey(path) }
	}
	// The index build's scans open data files from the page fetcher's
	// tails: each file's tail is read once, for the index and the reads.
	if sr, ok := opts.Rows.(scanRows); ok && sr.tails == nil {
		if pf, ok := opts.Fetcher.(*page.Fetcher); ok {
			sr.tails = pf
			opts.Rows = sr
		}
	}
	return &Samples{opts: opts, log: opts.Logger, rendered: page.NewMemCache(32 << 20)}, nil
}

// Spec is the sample spec.
func (s *Samples) Spec() Spec { return s.opts.Spec }

// Shards is the number of shards of every version.
func (s *Samples) Shards() int { return s.opts.Spec.shards() }

// Counters are the layer's counters.
func (s *Samples) Counters() *Counters { return &s.ctr }

// Versions lists the table's readable versions, oldest first.
func (s *Samples) Versions(ctx context.Context) ([]snapshot.VersionInfo, error) {
	return s.opts.Table.Versions(ctx)
}

// VersionAt is the version current at ts.
func (s *Samples) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	return s.opts.Table.VersionAt(ctx, ts)
}

// Version returns version v, building its snapshot on first use.
func (s *Samples) Version(ctx context.Context, v int64) (*Version, error) {
	ver, err := s.versions.get(ctx, v, func(ctx context.Context) (*Version, error) {
		snap, err := s.opts.Table.Snapshot(ctx, v)
		if err != nil {
			// Snapshot errors name the table and the version already.
			return nil, err
		}
		return s.newVersion(snap), nil
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for i, r := range s.recent {
		if r == ver {
			s.recent = append(s.recent[:i], s.recent[i+1:]...)
			break
		}
	}
	s.recent = append(s.recent, ver)
	if len(s.recent) > s.opts.KeepVersions {
		s.recent = s.recent[1:]
	}
	s.mu.Unlock()
	return ver, nil
}
