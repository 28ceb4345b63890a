package scan

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/snapshot"
)

// The contract of FileColumns: for every file of every readable version of
// every shared table, each top-level column alone, all of them together
// and none, FileColumns gives exactly the rows and values Scan.File gives
// (type widening, column mapping, partition values, missing columns,
// deletion vectors), or the same error.
func TestFileColumnsEqualsFile(t *testing.T) {
	exp := loadExpected(t)
	var tally columnsTally
	for _, name := range sortedKeys(exp) {
		if refusedTables[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tbl := snaptest.OpenDir(t, filepath.Join(testdataDir, name))
			for _, v := range exp[name].versionList() {
				snap := snaptest.Version(t, tbl, v)
				projections := [][]string{nil, {}}
				for _, f := range snap.Schema.Fields {
					projections = append(projections, []string{f.Name})
				}
				for _, cols := range projections {
					for _, f := range snap.Files {
						compareFileColumns(t, snap, cols, f, &tally)
					}
				}
			}
		})
	}
	t.Logf("%+v", tally)
	// The tables hold every kind, nulls, and deleted rows.
	for k := KindAny; k <= KindBool; k++ {
		if tally.values[k] == 0 {
			t.Errorf("no value of kind %s compared", k)
		}
	}
	if tally.nulls == 0 || tally.deleted == 0 || tally.files < 100 {
		t.Errorf("tally %+v: want nulls, deleted rows and at least 100 files", tally)
	}
}

type columnsTally struct {
	files, rows, nulls, deleted, errors int
	values                              [KindBool + 1]int
}

// fileRow is one row as Scan.File gives it, copied.
type fileRow struct {
	index int64
	vals  []any
}

// compareFileColumns reads f with Scan.File and with FileColumns, projected
// to cols, and fails t where they differ.
func compareFileColumns(t *testing.T, snap *snapshot.Snapshot, cols []string, f *snapshot.AddFile, tally *columnsTally) {
	t.Helper()
	sc, err := New(snap, cols)
	if err != nil {
		t.Fatalf("version %d %v: %v", snap.Version, cols, err)
	}
	var want []fileRow
	werr := sc.File(t.Context(), f, func(i int64, row []any) error {
		vals := make([]any, len(row))
		for j, x := range row {
			vals[j] = detach(x) // the row path's []byte alias its pages
		}
		want = append(want, fileRow{i, vals})
		return nil
	})
	var got []fileRow
	gerr := sc.FileColumns(t.Context(), f, func(b *Batch) error {
		checkBatch(t, sc, b)
		for i, row := range b.Rows {
			vals := make([]any, len(b.Cols))
			for j := range b.Cols {
				vals[j] = detach(b.Cols[j].Value(i))
				checkTyped(t, &b.Cols[j], i, vals[j])
			}
			got = append(got, fileRow{row, vals})
		}
		return nil
	})
	where := fmt.Sprintf("version %d, file %s, columns %q", snap.Version, f.Path, cols)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%s: Scan.File error %v, FileColumns error %v", where, werr, gerr)
	}
	if werr != nil {
		tally.errors++
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: FileColumns gave %d rows, Scan.File %d", where, len(got), len(want))
	}
	for i := range want {
		if got[i].index != want[i].index {
			t.Fatalf("%s: row %d is physical row %d, Scan.File says %d", where, i, got[i].index, want[i].index)
		}
		for j := range want[i].vals {
			if !sameValue(got[i].vals[j], want[i].vals[j]) {
				t.Fatalf("%s: row %d column %s = %#v, Scan.File gives %#v", where, want[i].index, sc.Fields()[j].Name, got[i].vals[j], want[i].vals[j])
			}
			if want[i].vals[j] == nil {
				tally.nulls++
			} else {
				tally.values[KindOf(sc.Fields()[j].Type)]++
			}
		}
	}
	tally.files++
	tally.rows += len(want)
	if n, err := FileRowCount(t.Context(), snap, f); err == nil {
		tally.deleted += int(n) - len(want)
	}
}

// checkBatch checks the shape of a batch: increasing rows within
// BatchRows, one vector per field of its kind and length, offsets in
// order, Nulls nil or with a null.
func checkBatch(t *testing.T, sc *Scan, b *Batch) {
	t.Helper()
	n := len(b.Rows)
	if n == 0 {
		t.Fatal("an empty batch")
	}
	for i := 1; i < n; i++ {
		if b.Rows[i] <= b.Rows[i-1] {
			t.Fatalf("rows %v not increasing", b.Rows)
		}
	}
	if b.Rows[n-1]-b.Rows[0] >= BatchRows {
		t.Fatalf("a batch spans rows %d..%d", b.Rows[0], b.Rows[n-1])
	}
	if len(b.Cols) != len(sc.Fields()) {
		t.Fatalf("%d vectors for %d fields", len(b.Cols), len(sc.Fields()))
	}
	for j := range b.Cols {
		v := &b.Cols[j]
		if v.Kind != KindOf(sc.Fields()[j].Type) || v.Type != sc.Fields()[j].Type {
			t.Fatalf("column %s: vector of kind %s, type %v", sc.Fields()[j].Name, v.Kind, v.Type)
		}
		if v.Nulls != nil && (len(v.Nulls) != n || !bytes.Contains(boolBytes(v.Nulls), []byte{1})) {
			t.Fatalf("column %s: Nulls %v for %d rows", sc.Fields()[j].Name, v.Nulls, n)
		}
		size := map[Kind]int{KindInt: len(v.Int), KindFloat: len(v.Float), KindBytes: len(v.Offsets) - 1, KindBool: len(v.Bool), KindAny: len(v.Any)}[v.Kind]
		if size != n {
			t.Fatalf("column %s: %d values for %d rows", sc.Fields()[j].Name, size, n)
		}
		if v.Kind == KindBytes {
			for i := range n {
				if v.Offsets[i] > v.Offsets[i+1] || int(v.Offsets[i+1]) > len(v.Data) {
					t.Fatalf("column %s: offsets %d..%d in %d bytes", sc.Fields()[j].Name, v.Offsets[i], v.Offsets[i+1], len(v.Data))
				}
			}
		}
	}
}

func boolBytes(b []bool) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		if x {
			out[i] = 1
		}
	}
	return out
}

// checkTyped checks the typed storage of value i of v against x, the
// value Scan.File gives (independently of Vector.Value).
func checkTyped(t *testing.T, v *Vector, i int, x any) {
	t.Helper()
	if v.IsNull(i) != (x == nil) {
		t.Fatalf("value %d: null %v, value %#v", i, v.IsNull(i), x)
	}
	if x == nil {
		return
	}
	ok := true
	switch v.Kind {
	case KindInt:
		w := reflect.ValueOf(x)
		ok = w.CanInt() && w.Int() == v.Int[i]
	case KindFloat:
		w := reflect.ValueOf(x)
		ok = w.CanFloat() && sameFloat(w.Float(), v.Float[i])
	case KindBytes:
		var w []byte
		switch s := x.(type) {
		case string:
			w = []byte(s)
		case []byte:
			w = s
		}
		ok = bytes.Equal(w, v.Data[v.Offsets[i]:v.Offsets[i+1]])
	case KindBool:
		ok = x == v.Bool[i]
	case KindAny:
		ok = sameValue(x, v.Any[i])
	}
	if !ok {
		t.Fatalf("value %d: %#v, vector of kind %s does not hold it", i, x, v.Kind)
	}
}

func sameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

// sameValue compares values as Scan.File gives them: same Go types, byte
// slices by content (nil and empty alike), floats by value (NaN equals
// NaN).
func sameValue(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch x := a.(type) {
	case []byte:
		return bytes.Equal(x, b.([]byte))
	case float32:
		return sameFloat(float64(x), float64(b.(float32)))
	case float64:
		return sameFloat(x, b.(float64))
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case Struct:
		y := b.(Struct)
		return reflect.DeepEqual(x.Names, y.Names) && sameValue(x.Values, y.Values)
	case Map:
		y := b.(Map)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i].Key, y[i].Key) || !sameValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
