package scan

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/snapshot"
)

// Rows in a file's deletion vector are skipped; the others keep their
// physical row index.
func TestDeletionVectorSmall(t *testing.T) {
	tbl := openTable(t, filepath.Join(testdataDir, "deltars-table-with-dv-small"))
	for v, want := range map[int64][]int64{0: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 1: {1, 2, 3, 4, 5, 6, 7, 8}} {
		snap := mustSnapshot(t, tbl, v)
		sc, err := New(snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		var idx []int64
		var vals []any
		err = sc.All(t.Context(), func(_ *snapshot.AddFile, i int64, row []any) error {
			idx = append(idx, i)
			vals = append(vals, row[0])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(idx, want) {
			t.Errorf("version %d: row indexes %v, want %v", v, idx, want)
		}
		for j, i := range idx {
			if vals[j] != int32(i) {
				t.Errorf("version %d: row %d = %v, want %d", v, i, vals[j], i)
			}
		}
	}
}

// Every version of tables with deletion vectors: the rows visited are
// exactly the file's rows outside its deletion vector.
func TestDeletionVectorsEveryVersion(t *testing.T) {
	exp := loadExpected(t)
	for _, name := range []string{"golden-dv-partitioned-with-checkpoint", "deltars-table_with_deletion_logs", "kernelrs-compacted-log-files-table"} {
		tbl := openTable(t, filepath.Join(testdataDir, name))
		withDV := 0
		for _, v := range exp[name].versionList() {
			snap := mustSnapshot(t, tbl, v)
			sc, err := New(snap, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range snap.Files {
				dv, err := snap.DeletedRows(t.Context(), f)
				if err != nil {
					t.Fatal(err)
				}
				if dv != nil {
					withDV++
				}
				var got []int64
				if err := sc.File(t.Context(), f, func(i int64, _ []any) error { got = append(got, i); return nil }); err != nil {
					t.Fatal(err)
				}
				n, err := FileRowCount(t.Context(), snap, f)
				if err != nil {
					t.Fatal(err)
				}
				var want []int64
				for i := range n {
					if dv == nil || !dv.Contains(uint64(i)) {
						want = append(want, i)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s version %d %s: rows %v, want %v", name, v, f.Path, got, want)
				}
			}
		}
		if withDV == 0 {
			t.Errorf("%s: no file with a deletion vector", name)
		}
	}
}

// The latest compacted-log table holds exactly the ids delta-kernel-rs
// expects.
func TestCompactedLogTableIDs(t *testing.T) {
	snap := mustSnapshot(t, openTable(t, filepath.Join(testdataDir, "kernelrs-compacted-log-files-table")), -1)
	got := sorted(scanJSON(t, snap, []string{"id"}))
	want := []string{`{"id":0}`, `{"id":10}`, `{"id":12}`, `{"id":1}`, `{"id":2}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
