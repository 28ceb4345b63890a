package scan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
)

// Rows in a file's deletion vector are skipped; the others keep their
// physical row index.
func TestDeletionVectorSmall(t *testing.T) {
	tbl := snaptest.OpenDir(t, filepath.Join(testdataDir, "deltars-table-with-dv-small"))
	for v, want := range map[int64][]int64{0: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 1: {1, 2, 3, 4, 5, 6, 7, 8}} {
		snap := snaptest.Version(t, tbl, v)
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
		tbl := snaptest.OpenDir(t, filepath.Join(testdataDir, name))
		withDV := 0
		for _, v := range exp[name].versionList() {
			snap := snaptest.Version(t, tbl, v)
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
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "kernelrs-compacted-log-files-table")), -1)
	got := sorted(scanJSON(t, snap, []string{"id"}))
	want := []string{`{"id":0}`, `{"id":10}`, `{"id":12}`, `{"id":1}`, `{"id":2}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Deletion vectors of every storage kind the protocol allows, through a
// scan: inline ('i', Z85 in the log), an absolute path ('p'), and a
// UUID-named file ('u') whose vector sits past the first 4 KiB of a file
// holding another vector before it. Only rows outside each vector are
// visited, with their physical row indexes.
func TestDeletionVectorStorageKinds(t *testing.T) {
	dir := t.TempDir()
	schema := parquet.NewSchema("x", parquet.Group{"n": parquet.Int(64)})
	file := func(base int64) []byte {
		var rows []parquet.Row
		for i := range int64(10) {
			rows = append(rows, parquet.Row{lv(parquet.Int64Value(base+i), 0, 0, 0)})
		}
		return writeParquet(t, schema, rows)
	}
	serial := func(rows ...uint64) []byte {
		bm := roaring64.BitmapOf(rows...)
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, uint32(1681511377))
		if _, err := bm.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	frame := func(data []byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		out = append(out, data...)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	}

	// 'i': the serialised vector, Z85-encoded (padded to 4 bytes).
	inline := serial(0, 9)
	padded := append(slices.Clone(inline), make([]byte, (4-len(inline)%4)%4)...)

	// 'p': an absolute path to a framed vector file.
	pFile := filepath.Join(dir, "dvs", "p.bin")
	pData := serial(3)
	writeFile(t, pFile, append([]byte{1}, frame(pData)...))

	// 'u': a UUID-named file; its vector follows a 5,000-byte one.
	uuid := []byte("0123456789abcdef")
	uName := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", uuid[0:4], uuid[4:6], uuid[6:8], uuid[8:10], uuid[10:16])
	filler := frame(bytes.Repeat([]byte{7}, 5000))
	uData := serial(1, 2, 5)
	uOff := 1 + len(filler)
	writeFile(t, filepath.Join(dir, "sub", uName), slices.Concat([]byte{1}, filler, frame(uData)))

	snap := writeTable(t, dir, schemaJSON("n:long"), nil, nil,
		genFile{path: "a.parquet", data: file(0), numRecords: 10, dv: map[string]any{
			"storageType": "i", "pathOrInlineDv": z85(t, padded), "sizeInBytes": len(inline), "cardinality": 2}},
		genFile{path: "b.parquet", data: file(100), numRecords: 10, dv: map[string]any{
			"storageType": "p", "pathOrInlineDv": "file://" + filepath.ToSlash(pFile), "offset": 1,
			"sizeInBytes": len(pData), "cardinality": 1}},
		genFile{path: "c.parquet", data: file(200), numRecords: 10, dv: map[string]any{
			"storageType": "u", "pathOrInlineDv": "sub" + z85(t, uuid), "offset": uOff,
			"sizeInBytes": len(uData), "cardinality": 3}},
	)
	got := map[string][]int64{}
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = sc.All(t.Context(), func(f *snapshot.AddFile, i int64, row []any) error {
		if row[0] != int64(i)+map[string]int64{"a.parquet": 0, "b.parquet": 100, "c.parquet": 200}[f.Path] {
			t.Errorf("%s row %d = %v", f.Path, i, row[0])
		}
		got[f.Path] = append(got[f.Path], i)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"a.parquet": {1, 2, 3, 4, 5, 6, 7, 8},
		"b.parquet": {0, 1, 2, 4, 5, 6, 7, 8, 9},
		"c.parquet": {0, 3, 4, 6, 7, 8, 9},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows visited %v, want %v", got, want)
	}
	if snap.NumRows() != 24 {
		t.Errorf("NumRows = %d, want 24", snap.NumRows())
	}
}

// z85 encodes data (a multiple of 4 bytes) as ZeroMQ's Z85, for building
// deletion-vector descriptors.
func z85(t *testing.T, data []byte) string {
	t.Helper()
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	if len(data)%4 != 0 {
		t.Fatalf("z85: %d bytes is not a multiple of 4", len(data))
	}
	var out []byte
	for i := 0; i < len(data); i += 4 {
		v := binary.BigEndian.Uint32(data[i:])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = digits[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
