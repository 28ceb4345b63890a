package sample

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/snapshot"
)

// Table is what the sample layer needs of a Delta table; *snapshot.Table
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
	// Scan calls fn for each live row of f, a data file of snap, in
	// physical order, with the row's physical index in the file and the
	// values of columns (logical names; partition columns included), in
	// that order. Values are Go values: nil for null, int64/int32/...,
	// float64/float32, string, []byte, bool, time.Time. Slices handed to fn
	// are valid only during the call.
	Scan(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(row int64, values []any)) error
	// ScanJSON calls fn for each live row of f with the row rendered as one
	// JSON object, exactly as `deltafs cat` prints it (no newline).
	ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(row int64, json []byte)) error
}

// FileRef names one data file of a version.
type FileRef struct {
	Path string // as written in the log (the cache and memo identity)
	Key  string // storage key
	Size int64  // bytes, from the log
}

// Fetcher reads single values of a data file: the data column of one row.
// PageFetcher is the Parquet implementation (page-level access through the
// offset index, pages cached).
type Fetcher interface {
	// Value returns the bytes of the physical column at a physical row of
	// f; nil for a null. The slice is shared and must not be modified.
	Value(ctx context.Context, f FileRef, column string, row int64) ([]byte, error)
	// NumRows is the physical row count of f from its footer.
	NumRows(ctx context.Context, f FileRef) (int64, error)
}

// Options configure a Samples.
type Options struct {
	Table   Table
	Rows    Rows
	Fetcher Fetcher
	Spec    Spec
	// Cache holds rendered JSON of whole data files (nil: a 64 MiB
	// MemCache).
	Cache BlobCache
	// Logger gets warnings (duplicate ids, unreadable files); nil: default.
	Logger *slog.Logger
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
	rendered *MemCache // encoded images, so a sample read in pieces is encoded once

	mu     sync.Mutex
	recent []*Version // guarded by mu; strong references to recently used versions

	ctr Counters
}

// Counters count the sample layer's work; read them with Stats.
type Counters struct {
	FilesIndexed   atomic.Int64 // data files whose sample metadata was built
	FilesFromCache atomic.Int64 // data files whose sample metadata came from the cache
	SamplesIndexed atomic.Int64 // samples in those files
	IndexBytes     atomic.Int64 // estimated memory of that metadata
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
		opts.Cache = NewMemCache(64 << 20)
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
	if opts.FileKey == nil {
		opts.FileKey = func(snap *snapshot.Snapshot, path string) (string, error) { return snap.FileKey(path) }
	}
	return &Samples{opts: opts, log: opts.Logger, rendered: NewMemCache(32 << 20)}, nil
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
	ver, err := s.versions.get(v, func() (*Version, error) {
		snap, err := s.opts.Table.Snapshot(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", v, err)
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
