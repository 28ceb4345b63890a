package scan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
)

// Nested shapes the shared tables lack: 2-level lists (a repeated
// primitive, a repeated group named "array" or "<name>_tuple"), a bare
// repeated field, a bare repeated key/value group as a map, nested lists
// with empty and null inner lists; each with null, empty and full values.
func TestNestedLegacyForms(t *testing.T) {
	i32 := func() parquet.Node { return parquet.Optional(parquet.Int(32)) }
	schema := parquet.NewSchema("x", parquet.Group{
		"a": parquet.Optional(parquet.Group{"element": parquet.Repeated(parquet.Int(32))}),
		"b": parquet.Repeated(parquet.Int(32)),
		"c": parquet.Optional(parquet.Group{"array": parquet.Repeated(parquet.Group{"x": i32()})}),
		"d": parquet.Optional(parquet.List(i32())),
		"e": parquet.Optional(parquet.Map(parquet.String(), i32())),
		"f": parquet.Repeated(parquet.Group{"key": parquet.String(), "value": i32()}),
		"g": parquet.Optional(parquet.List(parquet.Optional(parquet.List(i32())))),
		"h": parquet.Optional(parquet.Group{"h_tuple": parquet.Repeated(parquet.Group{"x": i32()})}),
	})
	i := func(v int32) parquet.Value { return parquet.Int32Value(v) }
	s := func(v string) parquet.Value { return parquet.ByteArrayValue([]byte(v)) }
	null := parquet.NullValue()
	// Leaves: 0 a.element, 1 b, 2 c.array.x, 3 d.list.element, 4 e.key,
	// 5 e.value, 6 f.key, 7 f.value, 8 g...element, 9 h.h_tuple.x.
	rows := []parquet.Row{{
		lv(i(1), 0, 2, 0), lv(i(2), 1, 2, 0),
		lv(i(3), 0, 1, 1),
		lv(i(1), 0, 3, 2), lv(null, 1, 2, 2),
		lv(i(1), 0, 3, 3), lv(null, 1, 2, 3),
		lv(s("k"), 0, 2, 4), lv(s("n"), 1, 2, 4),
		lv(i(1), 0, 3, 5), lv(null, 1, 2, 5),
		lv(s("k2"), 0, 1, 6),
		lv(i(2), 0, 2, 7),
		lv(i(1), 0, 5, 8), lv(null, 1, 3, 8), lv(null, 1, 2, 8),
		lv(i(5), 0, 3, 9),
	}, {
		lv(null, 0, 0, 0), lv(null, 0, 0, 1), lv(null, 0, 1, 2), lv(null, 0, 0, 3),
		lv(null, 0, 1, 4), lv(null, 0, 1, 5), lv(null, 0, 0, 6), lv(null, 0, 0, 7),
		lv(null, 0, 1, 8), lv(null, 0, 0, 9),
	}, {
		lv(null, 0, 1, 0), lv(i(4), 0, 1, 1), lv(i(5), 1, 1, 1), lv(null, 0, 0, 2), lv(null, 0, 1, 3),
		lv(null, 0, 0, 4), lv(null, 0, 0, 5), lv(s("z"), 0, 1, 6), lv(null, 0, 1, 7),
		lv(null, 0, 0, 8), lv(null, 0, 1, 9),
	}}
	data := writeParquet(t, schema, rows)
	arr := func(e string) string { return `{"type":"array","elementType":` + e + `,"containsNull":true}` }
	mp := `{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":true}`
	st := `{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]}`
	snap := writeTable(t, t.TempDir(), schemaJSON(
		"a:"+arr(`"integer"`), "b:"+arr(`"integer"`), "c:"+arr(st), "d:"+arr(`"integer"`),
		"e:"+mp, "f:"+mp, "g:"+arr(arr(`"integer"`)), "h:"+arr(st)),
		nil, nil, genFile{path: "n.parquet", data: data, numRecords: 3})
	got := scanJSON(t, snap, nil)
	want := []string{
		`{"a":[1,2],"b":[3],"c":[{"x":1},{"x":null}],"d":[1,null],"e":{"k":1,"n":null},"f":{"k2":2},"g":[[1],[],null],"h":[{"x":5}]}`,
		`{"a":null,"b":[],"c":[],"d":null,"e":{},"f":{},"g":[],"h":null}`,
		`{"a":[],"b":[4,5],"c":null,"d":[],"e":null,"f":{"z":null},"g":null,"h":[]}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// The Go values: []any, Map, Struct.
	sc, _ := New(snap, []string{"c", "e"})
	err := sc.File(t.Context(), snap.Files[0], func(i int64, row []any) error {
		if i != 0 {
			return nil
		}
		c := row[0].([]any)
		if x, _ := c[0].(Struct).Get("x"); x != int32(1) {
			t.Errorf("c[0].x = %#v", x)
		}
		if m := row[1].(Map); len(m) != 2 || m[0].Key != "k" || m[0].Value != int32(1) || m[1].Value != nil {
			t.Errorf("e = %#v", m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A file column that does not have the table's nested shape is an error
// naming it, not a panic.
func TestNestedShapeMismatch(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{
		"a": parquet.Optional(parquet.Group{"p": parquet.Optional(parquet.Int(32)), "q": parquet.Optional(parquet.Int(32))}),
		"b": parquet.Optional(parquet.Int(32)),
	})
	data := writeParquet(t, schema, []parquet.Row{{lv(parquet.Int32Value(1), 0, 2, 0), lv(parquet.Int32Value(1), 0, 2, 1), lv(parquet.Int32Value(1), 0, 1, 2)}})
	for _, c := range []struct{ field, want string }{
		{`a:{"type":"array","elementType":"integer","containsNull":true}`, "column a is not a list"},
		{`a:{"type":"map","keyType":"integer","valueType":"integer","valueContainsNull":true}`, "column a is not a map"},
		{`b:{"type":"array","elementType":"integer","containsNull":true}`, "column b is not a list"},
		{`a:integer`, "column a is a group"},
	} {
		snap := writeTable(t, t.TempDir(), schemaJSON(c.field), nil, nil, genFile{path: "a.parquet", data: data, numRecords: 1})
		sc, err := New(snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = sc.All(t.Context(), func(_ *snapshot.AddFile, _ int64, _ []any) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.field, err, c.want)
		}
	}
}
