// Package sampletest is an in-memory Delta-like table for tests of the sample
// layer and the FUSE tree: it implements sample.Table, sample.Rows and
// sample.Fetcher over rows held in memory, with commits, deletions (as
// deletion vectors) and "vacuumed" files, and no Parquet.
package sampletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Table is an in-memory table. Safe for concurrent use.
type Table struct {
	mu       sync.Mutex
	schema   *snapshot.StructType
	parts    []string
	versions []*snapshot.Snapshot
	files    map[string]*file // by path
	gone     map[string]bool  // vacuumed paths
	gen      map[string]int   // times a path was added
	// Calls counts Scan and ScanJSON calls per path, to check memoisation.
	Calls map[string]int
}

type file struct {
	rows    [][]any
	deleted map[int64]bool
}

// New returns an empty table (no versions) with a schema given as
// "name:type" pairs, e.g. "id:long", "label:integer", "pixels:binary".
func New(fields ...string) *Table {
	st := &snapshot.StructType{}
	for _, f := range fields {
		name, typ, _ := strings.Cut(f, ":")
		st.Fields = append(st.Fields, snapshot.StructField{Name: name, Type: &snapshot.PrimitiveType{Name: typ}, Nullable: true})
	}
	return &Table{schema: st, files: map[string]*file{}, gone: map[string]bool{}, gen: map[string]int{}, Calls: map[string]int{}}
}

// Partitioned marks columns as partition columns (for later commits).
func (t *Table) Partitioned(cols ...string) { t.parts = cols }

// Add is one data file added by a commit.
type Add struct {
	Path string
	Rows [][]any // in schema order
	// NoStats leaves the row count out of the log.
	NoStats bool
}

// Commit writes a new version: the files of the previous version minus
// remove, plus add, with deletes applied (path -> physical rows) as new
// deletion vectors. It returns the version.
func (t *Table) Commit(ts time.Time, op string, add []Add, remove []string, deletes map[string][]int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var prev []*snapshot.AddFile
	if n := len(t.versions); n > 0 {
		prev = t.versions[n-1].Files
	}
	rm := map[string]bool{}
	for _, r := range remove {
		rm[r] = true
	}
	var files []*snapshot.AddFile
	for _, f := range prev {
		if rm[f.Path] {
			continue
		}
		if del, ok := deletes[f.Path]; ok {
			old := t.files[f.Path]
			nf := &file{rows: old.rows, deleted: map[int64]bool{}}
			for r := range old.deleted {
				nf.deleted[r] = true
			}
			for _, r := range del {
				nf.deleted[r] = true
			}
			dvPath := fmt.Sprintf("%s@v%d", f.Path, len(t.versions))
			t.files[f.Path+"#"+dvPath] = nf
			cp := *f
			cp.DeletionVector = &snapshot.DeletionVector{StorageType: "u", PathOrInlineDv: dvPath, Cardinality: int64(len(nf.deleted))}
			files = append(files, &cp)
			continue
		}
		files = append(files, f)
	}
	for _, a := range add {
		t.files[a.Path] = &file{rows: a.Rows}
		t.gen[a.Path]++
		n := int64(len(a.Rows))
		if a.NoStats {
			n = -1
		}
		files = append(files, &snapshot.AddFile{Path: a.Path, Size: int64(1000 + len(a.Rows)), NumRecords: n, ModificationTime: ts.UnixMilli(),
			Stats: fmt.Sprintf(`{"numRecords":%d}`, len(a.Rows))})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	s := &snapshot.Snapshot{
		Version:    int64(len(t.versions)),
		Timestamp:  ts,
		Protocol:   snapshot.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
		Metadata:   snapshot.Metadata{PartitionColumns: t.parts},
		Schema:     t.schema,
		CommitInfo: snapshot.CommitInfo{Timestamp: ts.UnixMilli(), Operation: op, EngineInfo: "memtable"},
		Files:      files,
	}
	t.versions = append(t.versions, s)
	return s.Version
}

// Vacuum makes a data file unreadable.
func (t *Table) Vacuum(path string) {
	t.mu.Lock()
	t.gone[path] = true
	t.mu.Unlock()
}

// Versions implements sample.Table.
func (t *Table) Versions(ctx context.Context) ([]snapshot.VersionInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]snapshot.VersionInfo, len(t.versions))
	for i, s := range t.versions {
		out[i] = snapshot.VersionInfo{Version: s.Version, Timestamp: s.Timestamp, Operation: s.CommitInfo.Operation, Engine: "memtable"}
	}
	return out, nil
}

// Snapshot implements sample.Table.
func (t *Table) Snapshot(ctx context.Context, v int64) (*snapshot.Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v < 0 {
		v = int64(len(t.versions)) - 1
	}
	if v < 0 || v >= int64(len(t.versions)) {
		return nil, fmt.Errorf("no version %d", v)
	}
	return t.versions[v], nil
}

// VersionAt implements sample.Table.
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := int64(-1)
	for _, s := range t.versions {
		if !s.Timestamp.After(ts) {
			v = s.Version
		}
	}
	if v < 0 {
		return 0, errors.New("no version at that time")
	}
	return v, nil
}

// FileKey is the storage key of a path (for sample.Options.FileKey).
func FileKey(snap *snapshot.Snapshot, path string) (string, error) { return path, nil }

func (t *Table) file(f *snapshot.AddFile) (*file, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone[f.Path] {
		return nil, fmt.Errorf("%s: %w", f.Path, storage.ErrNotExist)
	}
	key := f.Path
	if f.DeletionVector != nil {
		key += "#" + f.DeletionVector.PathOrInlineDv
	}
	fl, ok := t.files[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	return fl, nil
}

// Scan implements sample.Rows.
func (t *Table) Scan(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(row int64, values []any)) error {
	t.mu.Lock()
	t.Calls[f.Path]++
	t.mu.Unlock()
	fl, err := t.file(f)
	if err != nil {
		return err
	}
	idx := make([]int, len(columns))
	for i, c := range columns {
		idx[i] = -1
		for j, fld := range snap.Schema.Fields {
			if fld.Name == c {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return fmt.Errorf("no column %q", c)
		}
	}
	vals := make([]any, len(columns))
	for r, row := range fl.rows {
		if fl.deleted[int64(r)] {
			continue
		}
		for i, j := range idx {
			vals[i] = row[j]
		}
		fn(int64(r), vals)
	}
	return ctx.Err()
}

// Columns implements sample.Rows: the live rows in one batch, each column
// a typed vector as package scan builds them (by the column's type).
func (t *Table) Columns(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(b *scan.Batch) error) error {
	b := &scan.Batch{Cols: make([]scan.Vector, len(columns))}
	for i, c := range columns {
		fld := snap.Schema.Field(c)
		if fld == nil {
			return fmt.Errorf("no column %q", c)
		}
		b.Cols[i] = scan.Vector{Kind: scan.KindOf(fld.Type), Type: fld.Type}
		if b.Cols[i].Kind == scan.KindBytes {
			b.Cols[i].Offsets = []uint32{0}
		}
	}
	err := t.Scan(ctx, snap, f, columns, func(row int64, vals []any) {
		b.Rows = append(b.Rows, row)
		for i, x := range vals {
			v := &b.Cols[i]
			if x == nil {
				if v.Nulls == nil {
					v.Nulls = make([]bool, len(b.Rows)-1)
				}
			}
			if v.Nulls != nil {
				v.Nulls = append(v.Nulls, x == nil)
			}
			switch v.Kind {
			case scan.KindInt:
				var n int64
				switch y := x.(type) {
				case int64:
					n = y
				case int32:
					n = int64(y)
				case int16:
					n = int64(y)
				case int8:
					n = int64(y)
				}
				v.Int = append(v.Int, n)
			case scan.KindFloat:
				var g float64
				switch y := x.(type) {
				case float64:
					g = y
				case float32:
					g = float64(y)
				}
				v.Float = append(v.Float, g)
			case scan.KindBytes:
				switch y := x.(type) {
				case string:
					v.Data = append(v.Data, y...)
				case []byte:
					v.Data = append(v.Data, y...)
				}
				v.Offsets = append(v.Offsets, uint32(len(v.Data)))
			case scan.KindBool:
				y, _ := x.(bool)
				v.Bool = append(v.Bool, y)
			default:
				v.Any = append(v.Any, x)
			}
		}
	})
	if err != nil || len(b.Rows) == 0 {
		return err
	}
	return fn(b)
}

// ScanJSON implements sample.Rows: a JSON object in schema order.
func (t *Table) ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(row int64, js []byte)) error {
	return t.Scan(ctx, snap, f, snap.Schema.Names(), func(row int64, values []any) {
		fn(row, RenderJSON(snap.Schema.Names(), values))
	})
}

// RenderJSON renders a row as the fake's JSON.
func RenderJSON(names []string, values []any) []byte {
	var b []byte
	b = append(b, '{')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(n)
		v, _ := json.Marshal(values[i])
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}')
}

// Value implements sample.Fetcher.
func (t *Table) Value(ctx context.Context, ref page.FileRef, column string, row int64) ([]byte, error) {
	fl, err := t.file(&snapshot.AddFile{Path: ref.Path})
	if err != nil {
		return nil, err
	}
	for j, fld := range t.schema.Fields {
		if fld.PhysicalName() == column {
			if row < 0 || row >= int64(len(fl.rows)) {
				return nil, fmt.Errorf("row %d out of range", row)
			}
			switch v := fl.rows[row][j].(type) {
			case []byte:
				return v, nil
			case string:
				return []byte(v), nil
			case nil:
				return nil, nil
			}
			return nil, fmt.Errorf("column %s is not binary", column)
		}
	}
	return nil, fmt.Errorf("no column %q", column)
}

// Values implements sample.Fetcher.
func (t *Table) Values(ctx context.Context, ref page.FileRef, column string, fn func(row int64, v []byte) error) error {
	n, err := t.NumRows(ctx, ref)
	if err != nil {
		return err
	}
	for row := range n {
		v, err := t.Value(ctx, ref, column, row)
		if err != nil {
			return err
		}
		if err := fn(row, v); err != nil {
			return err
		}
	}
	return nil
}

// NumRows implements sample.Fetcher.
func (t *Table) NumRows(ctx context.Context, ref page.FileRef) (int64, error) {
	fl, err := t.file(&snapshot.AddFile{Path: ref.Path})
	if err != nil {
		return 0, err
	}
	return int64(len(fl.rows)), nil
}

// Location names the table in errors.
func (t *Table) Location() string { return "mem://table" }

// Identify implements sample.Fetcher: a file's identity is its path and
// the generation it was added at (a file re-added under the same path is
// another object).
func (t *Table) Identify(ctx context.Context, ref page.FileRef) (page.FileRef, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone[ref.Path] {
		return ref, fmt.Errorf("%s: %w", ref.Path, storage.ErrNotExist)
	}
	ref.ID = fmt.Sprintf("mem:%d:%d", t.gen[ref.Path], ref.Size)
	return ref, nil
}

// Options returns sample options over the table with spec.
func (t *Table) Options(spec sample.Spec) sample.Options {
	return sample.Options{Table: t, Rows: t, Fetcher: t, Spec: spec, FileKey: FileKey}
}
