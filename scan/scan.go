package scan

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/deltafs/deltafs/snapshot"
)

// Scan reads the live rows of one snapshot, projected to some of its
// top-level columns. Safe for concurrent use.
type Scan struct {
	snap   *snapshot.Snapshot
	fields []snapshot.StructField
	opts   Options
}

// Options tune a Scan. The zero value gives the defaults.
type Options struct {
	// PartitionTimeZone is the zone of timestamp partition values written
	// without one ("2021-09-08 11:11:11"): the protocol says the writer's
	// zone, which the log does not record. Default UTC.
	PartitionTimeZone *time.Location
	// Tail, when set, gives a data file's tail (its footer and page
	// index: what pqcheck.ReadTail returns, checked again here) instead of
	// reading it from storage, so that a caller that keeps tails (the
	// sample layer's page fetcher) reads each file's tail once for its
	// scans and its own reads. key is the file's storage key, size its
	// size in bytes (0: unknown).
	Tail func(ctx context.Context, key string, size int64) (tail []byte, off int64, err error)
}

// New prepares a scan of snap projected to columns (logical top-level
// names, in the order wanted; nil for every column in schema order). An
// unknown column is an error naming it and the available ones. Errors do
// not name the version: the caller, who names the table, does.
func New(snap *snapshot.Snapshot, columns []string) (*Scan, error) {
	return NewWithOptions(snap, columns, Options{})
}

// NewWithOptions is New with options.
func NewWithOptions(snap *snapshot.Snapshot, columns []string, opts Options) (*Scan, error) {
	if opts.PartitionTimeZone == nil {
		opts.PartitionTimeZone = time.UTC
	}
	s := &Scan{snap: snap, opts: opts}
	if columns == nil {
		s.fields = snap.Schema.Fields
	} else {
		s.fields = make([]snapshot.StructField, 0, len(columns))
		seen := map[string]bool{}
		for _, c := range columns {
			f := snap.Schema.Field(c)
			if f == nil {
				return nil, fmt.Errorf("no column %q; the columns are: %s",
					c, strings.Join(snap.Schema.Names(), ", "))
			}
			if seen[c] {
				return nil, fmt.Errorf("column %q asked for twice", c)
			}
			seen[c] = true
			s.fields = append(s.fields, *f)
		}
	}
	for i := range s.fields {
		if err := checkReadable(&s.fields[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkReadable fails on types this package cannot read and on
// unsupported type changes.
func checkReadable(f *snapshot.StructField) error {
	if err := checkTypeChanges(f); err != nil {
		return err
	}
	var walk func(dt snapshot.DataType) error
	walk = func(dt snapshot.DataType) error {
		switch t := dt.(type) {
		case *snapshot.PrimitiveType:
			if _, _, ok := t.Decimal(); ok {
				return nil
			}
			switch t.Name {
			case "string", "binary", "long", "integer", "short", "byte", "float", "double",
				"boolean", "date", "timestamp", "timestamp_ntz", "void":
				return nil
			}
			return fmt.Errorf("column %q: type %s is not supported", f.Name, t.Name)
		case *snapshot.StructType:
			for i := range t.Fields {
				if err := walk(t.Fields[i].Type); err != nil {
					return err
				}
			}
		case *snapshot.ArrayType:
			return walk(t.ElementType)
		case *snapshot.MapType:
			if err := walk(t.KeyType); err != nil {
				return err
			}
			return walk(t.ValueType)
		default:
			return fmt.Errorf("column %q: unknown type %v", f.Name, dt)
		}
		return nil
	}
	return walk(f.Type)
}

// Fields are the projected fields, in output order.
func (s *Scan) Fields() []snapshot.StructField { return s.fields }

// Snapshot is the snapshot scanned.
func (s *Scan) Snapshot() *snapshot.Snapshot { return s.snap }

// open opens data file f for File and FileColumns with its deletion
// vector (nil when it has none), checking its row count against the log's.
func (s *Scan) open(ctx context.Context, f *snapshot.AddFile) (*FileReader, *roaring64.Bitmap, error) {
	dv, err := s.snap.DeletedRows(ctx, f)
	if err != nil {
		return nil, nil, fileErr(s.snap.Version, f.Path, err)
	}
	r, err := openFile(ctx, s.snap, f, s.opts.Tail)
	if err != nil {
		return nil, nil, err
	}
	r.tz = s.opts.PartitionTimeZone
	if f.NumRecords >= 0 && f.NumRecords != r.NumRows() {
		// Row counts from the log place rows (shards, deletion vectors):
		// a file that disagrees is not the file the log describes.
		return nil, nil, fileErr(s.snap.Version, f.Path, fmt.Errorf("the data file has %d rows, its statistics in the log say %d", r.NumRows(), f.NumRecords))
	}
	return r, dv, nil
}

// File calls fn for each live row of data file f, in file order, with the
// row's physical index in the file (what deletion vectors index) and its
// values in Fields() order. Rows deleted by f's deletion vector are
// skipped. The row slice, and the []byte values in it, are valid only
// during the call. Errors are *FileError values naming the version and
// the file; an error returned by fn is returned as it is.
func (s *Scan) File(ctx context.Context, f *snapshot.AddFile, fn func(rowIndex int64, row []any) error) error {
	r, dv, err := s.open(ctx, f)
	if err != nil {
		return err
	}
	ferr := error(nil)
	err = r.readRows(ctx, s.fields, 0, math.MaxInt64, dv, func(row int64, vals []any) error {
		ferr = fn(row, vals)
		return ferr
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// All calls fn for each live row of the snapshot: the files in snapshot
// order, the rows of each in file order.
func (s *Scan) All(ctx context.Context, fn func(f *snapshot.AddFile, rowIndex int64, row []any) error) error {
	for _, f := range s.snap.Files {
		if err := s.File(ctx, f, func(i int64, row []any) error { return fn(f, i, row) }); err != nil {
			return err
		}
	}
	return nil
}

// AppendJSON appends row, a row of this scan, as a JSON object (see the
// package function AppendJSON).
func (s *Scan) AppendJSON(buf []byte, row []any) []byte {
	return AppendJSON(buf, s.fields, row)
}
