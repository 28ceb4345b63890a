package scan

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/parquet-go/parquet-go"
)

// Name mode on a Databricks table: data columns and partitionValues by
// physical name, logical names (with spaces) out.
func TestColumnMappingNameTable(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "deltars-table_with_column_mapping")), -1)
	if snap.ColumnMappingMode() != "name" {
		t.Fatalf("mode %q", snap.ColumnMappingMode())
	}
	got := sorted(scanJSON(t, snap, nil))
	want := []string{
		`{"Company Very Short":"BME","Super Name":"Timothy Lamb"}`,
		`{"Company Very Short":"BMS","Super Name":"Anthony Johnson"}`,
		`{"Company Very Short":"BMS","Super Name":"Mr. Daniel Ferguson MD"}`,
		`{"Company Very Short":"BMS","Super Name":"Nathan Bennett"}`,
		`{"Company Very Short":"BMS","Super Name":"Stephanie Mcgrath"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// mappedSchema is a schema whose fields (and nested field) carry physical
// names and ids: a (id 1), b (id 2), s (id 3) with x (id 4), c (id 9).
const mappedSchema = `{"type":"struct","fields":[
{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}},
{"name":"b","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}},
{"name":"s","type":{"type":"struct","fields":[
  {"name":"x","type":"integer","nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-x"}}]},
 "nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-s"}},
{"name":"c","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":9,"delta.columnMapping.physicalName":"zz"}}]}`

func mappedFile(t *testing.T, withIDs bool) []byte {
	id := func(n parquet.Node, i int) parquet.Node {
		if withIDs {
			return parquet.FieldID(n, i)
		}
		return n
	}
	// Leaf order: col-a, col-b, col-s.col-x, zz (group fields sort by name).
	names := [4]string{"col-a", "col-b", "col-s", "zz"}
	if withIDs {
		// Names unrelated to the physical names: only ids can match.
		names = [4]string{"p1", "p2", "p3", "zz"}
	}
	inner := "col-x"
	if withIDs {
		inner = "q"
	}
	schema := parquet.NewSchema("x", parquet.Group{
		names[0]: id(parquet.Optional(parquet.Int(64)), 1),
		names[1]: id(parquet.Optional(parquet.String()), 2),
		names[2]: id(parquet.Optional(parquet.Group{inner: id(parquet.Optional(parquet.Int(32)), 4)}), 3),
		names[3]: id(parquet.Optional(parquet.Int(64)), 2000),
	})
	return writeParquet(t, schema, []parquet.Row{
		{lv(parquet.Int64Value(10), 0, 1, 0), lv(parquet.ByteArrayValue([]byte("ten")), 0, 1, 1), lv(parquet.Int32Value(100), 0, 2, 2), lv(parquet.Int64Value(7), 0, 1, 3)},
		{lv(parquet.NullValue(), 0, 0, 0), lv(parquet.NullValue(), 0, 0, 1), lv(parquet.NullValue(), 0, 1, 2), lv(parquet.NullValue(), 0, 0, 3)},
		{lv(parquet.Int64Value(30), 0, 1, 0), lv(parquet.ByteArrayValue([]byte("x")), 0, 1, 1), lv(parquet.NullValue(), 0, 0, 2), lv(parquet.Int64Value(8), 0, 1, 3)},
	})
}

func TestColumnMappingID(t *testing.T) {
	data := mappedFile(t, true)
	idSnap := writeTable(t, t.TempDir(), mappedSchema, nil, map[string]string{"delta.columnMapping.mode": "id"},
		genFile{path: "f.parquet", data: data, numRecords: 3})
	got := scanJSON(t, idSnap, nil)
	want := []string{
		`{"a":10,"b":"ten","s":{"x":100},"c":null}`,
		`{"a":null,"b":null,"s":{"x":null},"c":null}`,
		`{"a":30,"b":"x","s":null,"c":null}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("id mode:\ngot  %v\nwant %v", got, want)
	}
	// The same file in name mode: no physical name matches but zz.
	nameSnap := writeTable(t, t.TempDir(), mappedSchema, nil, map[string]string{"delta.columnMapping.mode": "name"},
		genFile{path: "f.parquet", data: data, numRecords: 3})
	got = scanJSON(t, nameSnap, nil)
	want = []string{
		`{"a":null,"b":null,"s":null,"c":7}`,
		`{"a":null,"b":null,"s":null,"c":null}`,
		`{"a":null,"b":null,"s":null,"c":8}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("name mode:\ngot  %v\nwant %v", got, want)
	}
}

// A file without field ids in id mode: columns by physical name.
func TestColumnMappingIDFallback(t *testing.T) {
	snap := writeTable(t, t.TempDir(), mappedSchema, nil, map[string]string{"delta.columnMapping.mode": "id"},
		genFile{path: "f.parquet", data: mappedFile(t, false), numRecords: 3})
	got := scanJSON(t, snap, nil)
	want := []string{
		`{"a":10,"b":"ten","s":{"x":100},"c":7}`,
		`{"a":null,"b":null,"s":{"x":null},"c":null}`,
		`{"a":30,"b":"x","s":null,"c":8}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// Schema evolution: columns (and a nested field) added after a file was
// written read as null from it; no mapping: by logical name, falling back
// to a case-insensitive match.
func TestMissingColumns(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{
		"ID": parquet.Optional(parquet.Int(64)),
		"s":  parquet.Optional(parquet.Group{"x": parquet.Optional(parquet.Int(32))}),
	})
	data := writeParquet(t, schema, []parquet.Row{
		{lv(parquet.Int64Value(1), 0, 1, 0), lv(parquet.Int32Value(5), 0, 2, 1)},
		{lv(parquet.Int64Value(2), 0, 1, 0), lv(parquet.NullValue(), 0, 0, 1)},
	})
	snap := writeTable(t, t.TempDir(), `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":true,"metadata":{}},
{"name":"added","type":"string","nullable":true,"metadata":{}},
{"name":"s","type":{"type":"struct","fields":[{"name":"y","type":"long","nullable":true,"metadata":{}},
  {"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"t","type":{"type":"struct","fields":[{"name":"y","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`,
		nil, nil, genFile{path: "f.parquet", data: data, numRecords: 2})
	got := scanJSON(t, snap, nil)
	want := []string{
		`{"id":1,"added":null,"s":{"y":null,"x":5},"t":null}`,
		`{"id":2,"added":null,"s":null,"t":null}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// A struct none of whose fields the file has is still null or not as
	// the file says.
	snap = writeTable(t, t.TempDir(), `{"type":"struct","fields":[
{"name":"s","type":{"type":"struct","fields":[{"name":"new","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`,
		nil, nil, genFile{path: "f.parquet", data: data, numRecords: 2})
	got = scanJSON(t, snap, nil)
	if want := []string{`{"s":{"new":null}}`, `{"s":null}`}; !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// ColumnLeaf finds the leaf of a field per the mapping mode.
func TestColumnLeafMapping(t *testing.T) {
	snap := writeTable(t, t.TempDir(), mappedSchema, nil, map[string]string{"delta.columnMapping.mode": "id"},
		genFile{path: "f.parquet", data: mappedFile(t, true), numRecords: 3})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "p1", "b": "p2", "c": ""} {
		col, err := r.ColumnLeaf(*snap.Schema.Field(name))
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case want == "" && col != nil:
			t.Errorf("%s: got %s, want none", name, col.Name())
		case want != "" && (col == nil || col.Name() != want):
			t.Errorf("%s: got %v, want %s", name, col, want)
		}
	}
	if _, err := r.ColumnLeaf(*snap.Schema.Field("s")); err == nil {
		t.Error("struct field: want an error")
	}
}
