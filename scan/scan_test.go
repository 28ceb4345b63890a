package scan

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/snapshot"
)

func fieldNames(fs []snapshot.StructField) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func TestNewProjection(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "dat-multi_partitioned")), 2)
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(sc.Fields()); !reflect.DeepEqual(got, []string{"letter", "date", "data", "number"}) {
		t.Errorf("all columns: %v", got)
	}
	if sc.Snapshot() != snap {
		t.Error("Snapshot()")
	}
	sc, err = New(snap, []string{"number", "letter"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(sc.Fields()); !reflect.DeepEqual(got, []string{"number", "letter"}) {
		t.Errorf("projection: %v", got)
	}
	rows := sorted(scanJSON(t, snap, []string{"number", "letter"}))
	if want := []string{`{"number":6,"letter":"/%20%f"}`, `{"number":7,"letter":"b"}`}; !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v", rows)
	}
	_, err = New(snap, []string{"number", "Letter"})
	if err == nil || err.Error() != `no column "Letter"; the columns are: letter, date, data, number` {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := New(snap, []string{"number", "number"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("column twice: %v", err)
	}
	// No columns: only the row indexes.
	sc, _ = New(snap, []string{})
	n := 0
	if err := sc.All(t.Context(), func(_ *snapshot.AddFile, _ int64, row []any) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("no columns: %d rows, %v", n, err)
	}
}

// A data file with no row groups has no rows.
func TestZeroRowGroups(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "deltars-delta-0.8-empty")), 0)
	zero := 0
	for _, f := range snap.Files {
		r, err := OpenFile(t.Context(), snap, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Parquet().RowGroups()) == 0 {
			zero++
			if n, err := scanFile(t, snap, f); n != 0 || err != nil {
				t.Errorf("%s: %d rows, %v", f.Path, n, err)
			}
		}
	}
	if zero == 0 {
		t.Error("no file without row groups")
	}
}
