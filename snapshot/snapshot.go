package snapshot

import (
	"context"
	"errors"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltafs/deltafs/storage"
)

// CONTRACT (being implemented): the signatures below are what the other
// packages build on. Bodies marked TODO are filled in by the log replay work.

var errTODO = errors.New("snapshot: not implemented yet")

// Table is an opened Delta table. It caches what it has read of the log, so
// snapshots of many versions share state. Safe for concurrent use.
type Table struct {
	st storage.Storage
}

// Open opens the table at st. It fails with a clear error when the location
// does not exist or holds no Delta log.
func Open(ctx context.Context, st storage.Storage) (*Table, error) {
	return nil, errTODO // TODO
}

// Storage is the table's storage.
func (t *Table) Storage() storage.Storage { return t.st }

// VersionInfo is one readable version, as `deltafs log` lists it.
type VersionInfo struct {
	Version   int64
	Timestamp time.Time // commit time used for time travel
	Operation string
	Engine    string
}

// Versions lists the readable versions, oldest first, listing the log again
// to find new commits.
func (t *Table) Versions(ctx context.Context) ([]VersionInfo, error) {
	return nil, errTODO // TODO
}

// Snapshot returns the state of the table at version (-1 for the latest).
func (t *Table) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	return nil, errTODO // TODO
}

// VersionAt returns the latest version committed at or before ts.
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	return 0, errTODO // TODO
}

// Snapshot is the table at one version. Immutable; AddFile pointers are
// shared between snapshots of the same table and must not be modified.
type Snapshot struct {
	Table      *Table
	Version    int64
	Timestamp  time.Time // commit time used for time travel
	Protocol   Protocol
	Metadata   Metadata
	Schema     *StructType // logical schema
	CommitInfo CommitInfo  // zero when the commit has none
	Files      []*AddFile  // live data files, sorted by Path
}

// ColumnMappingMode is "none", "name" or "id".
func (s *Snapshot) ColumnMappingMode() string {
	if m := s.Metadata.Configuration["delta.columnMapping.mode"]; m != "" {
		return m
	}
	return "none"
}

// NumRows is the number of live rows, or -1 if some file has no statistics.
func (s *Snapshot) NumRows() int64 {
	var n int64
	for _, f := range s.Files {
		r := f.LiveRows()
		if r < 0 {
			return -1
		}
		n += r
	}
	return n
}

// DeletedRows loads the deletion vector of f (nil when it has none), with
// its checksum and cardinality checked.
func (s *Snapshot) DeletedRows(ctx context.Context, f *AddFile) (*roaring64.Bitmap, error) {
	return nil, errTODO // TODO
}

// FileKey is the storage key of a data file path as written in the log (a
// URL-encoded path relative to the table root, or an absolute URI inside it).
func (s *Snapshot) FileKey(path string) (string, error) {
	return "", errTODO // TODO
}
