package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// VersionInfo is one readable version, as `deltafs log` lists it.
type VersionInfo struct {
	Version   int64
	Timestamp time.Time // commit time used for time travel
	Operation string
	Engine    string
}

// Snapshot is the table at one version. Immutable; AddFile pointers are
// shared between snapshots of the same table and must not be modified.
type Snapshot struct {
	Table      *Log
	Version    int64
	Timestamp  time.Time // commit time used for time travel
	Protocol   Protocol
	Metadata   Metadata
	Schema     *StructType // logical schema
	CommitInfo CommitInfo  // zero when the commit has none
	Files      []*AddFile  // live data files, sorted by Path

	// What replay needs to continue from this snapshot.
	protocol     *Protocol
	metadata     *Metadata
	protocolFrom string
	metadataFrom string
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
// its checksum and cardinality checked. Decoded vectors are cached by the
// table; each call returns a fresh copy.
func (s *Snapshot) DeletedRows(ctx context.Context, f *AddFile) (*roaring64.Bitmap, error) {
	if f.DeletionVector == nil {
		return nil, nil
	}
	return s.Table.deletedRows(ctx, s.Version, f)
}

// FileKey is the storage key of a data file path as written in the log (a
// URL-encoded path relative to the table root, or an absolute URI inside it).
func (s *Snapshot) FileKey(path string) (string, error) {
	k, err := fileKey(s.Table.st.Location(), path)
	if err != nil {
		return "", s.Table.err(s.Version, "", fmt.Errorf("data file %q: %w", path, err))
	}
	return k, nil
}

// PartitionColumn is one partition column of a snapshot.
type PartitionColumn struct {
	Name         string   // logical name, as in Metadata.PartitionColumns
	PhysicalName string   // the key of AddFile.PartitionValues
	Type         DataType // nil when the schema lacks the column
}

// PartitionColumns lists the partition columns in order, with the key
// under which AddFile.PartitionValues holds each (its physical name under
// column mapping, else its logical name).
func (s *Snapshot) PartitionColumns() []PartitionColumn {
	out := make([]PartitionColumn, len(s.Metadata.PartitionColumns))
	for i, name := range s.Metadata.PartitionColumns {
		out[i] = PartitionColumn{Name: name, PhysicalName: name}
		if f := s.Schema.Field(name); f != nil {
			out[i].Type = f.Type
			if s.ColumnMappingMode() != "none" {
				out[i].PhysicalName = f.PhysicalName()
			}
		}
	}
	return out
}

// PartitionValue returns the raw (string) partition value of a logical
// partition column for file f, and whether it is non-null. Typed parsing
// is the scan package's job.
func (s *Snapshot) PartitionValue(f *AddFile, column string) (string, bool) {
	key := column
	if s.ColumnMappingMode() != "none" {
		if fld := s.Schema.Field(column); fld != nil {
			key = fld.PhysicalName()
		}
	}
	v, ok := f.PartitionValues[key]
	if !ok && key != column {
		// Some writers key by logical name even under column mapping.
		v, ok = f.PartitionValues[column]
	}
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}
