package scan

import (
	"math"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck/pqtest"
	"github.com/deltafs/deltafs/snapshot"
)

// A page claiming 2 GiB fails the reads that need it — a scan of its row
// group — with an error naming the file, the column
// and the claim; the other row groups and pages read.
func TestHostilePage(t *testing.T) {
	data, _ := rgFile(t, &parquet.Snappy)
	f, err := pqtest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f.Page(1, "id", 2).Header.CompressedPageSize = math.MaxInt32
	hostile := f.Bytes()

	snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: hostile, numRecords: rgRows})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	const want = "version 0: f.parquet: column id: a page claims 2147483647 bytes, "
	none := func(int64, []any) error { return nil }
	if err := r.ReadRows(t.Context(), snap.Schema.Fields, 0, 700, none); err != nil {
		t.Fatalf("row group 0: %v", err)
	}
	if err := r.ReadRows(t.Context(), snap.Schema.Fields, 0, rgRows, none); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("every row: %v, want %q", err, want)
	}
	if err := r.ReadRows(t.Context(), snap.Schema.Fields[1:2], 0, rgRows, none); err != nil {
		t.Fatalf("column s alone: %v", err)
	}
	s, _ := New(snap, nil)
	err = s.FileColumns(t.Context(), snap.Files[0], func(*Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("FileColumns: %v, want %q", err, want)
	}
	if err := s.All(t.Context(), func(*snapshot.AddFile, int64, []any) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("scan: %v", err)
	}
}
