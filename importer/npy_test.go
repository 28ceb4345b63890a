package importer

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/writer"
)

// typedDict and typedRecords are a structured array with every supported
// field kind, as NumPy 1.24 saves
//
//	dt = [('b','?'),('i1','i1'),('i2','<i2'),('i4','>i4'),('u1','u1'),('u2','<u2'),
//	      ('u4','<u4'),('u8','<u8'),('h','<f2'),('f','<f4'),('d','>f8'),('s','S4'),
//	      ('u','<U3'),('img','u1',(2,3)),('v','V2')]
//
// with two records (see TestNpyTypes for the values).
const typedDict = "{'descr': [('b', '|b1'), ('i1', '|i1'), ('i2', '<i2'), ('i4', '>i4'), ('u1', '|u1'), ('u2', '<u2'), ('u4', '<u4'), ('u8', '<u8'), ('h', '<f2'), ('f', '<f4'), ('d', '>f8'), ('s', '|S4'), ('u', '<U3'), ('img', '|u1', (2, 3)), ('v', '|V2')], 'fortran_order': False, 'shape': (2,), }"

func typedRecords() []byte {
	var b bytes.Buffer
	le, be := binary.LittleEndian, binary.BigEndian
	w := func(order binary.ByteOrder, v any) { binary.Write(&b, order, v) }
	utf32 := func(s string, n int) {
		rs := []rune(s)
		for i := range n {
			r := rune(0)
			if i < len(rs) {
				r = rs[i]
			}
			w(le, uint32(r))
		}
	}
	// Record 0.
	w(le, uint8(1))
	w(le, int8(-5))
	w(le, int16(-300))
	w(be, int32(70000))
	w(le, uint8(200))
	w(le, uint16(60000))
	w(le, uint32(4000000000))
	w(le, uint64(1)<<62)
	w(le, uint16(0x3e00)) // 1.5 as a half
	w(le, float32(0.25))
	w(be, float64(-2.5))
	b.WriteString("ab\x00\x00")
	utf32("hé", 3)
	b.Write([]byte{1, 2, 3, 4, 5, 6})
	b.Write([]byte{1, 2})
	// Record 1.
	w(le, uint8(0))
	w(le, int8(127))
	w(le, int16(32767))
	w(be, int32(-1))
	w(le, uint8(0))
	w(le, uint16(0))
	w(le, uint32(0))
	w(le, uint64(0))
	w(le, uint16(34446)) // -0.0001 as a half
	w(le, float32(-1e30))
	w(be, float64(1e300))
	b.WriteString("abcd")
	utf32("xyz", 3)
	b.Write(bytes.Repeat([]byte{9}, 6))
	b.Write([]byte{0, 0})
	return b.Bytes()
}

func TestNpyTypes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "typed.npy")
	if p := os.Getenv("DELTAFS_TYPED_NPY"); p != "" {
		src = p // cross-check against a file NumPy wrote
	} else {
		writeNpy(t, src, typedDict, typedRecords())
	}
	table := filepath.Join(dir, "t")
	if _, err := importPath(t, src, table, writer.Options{}); err != nil {
		t.Fatal(err)
	}
	s := snaptest.Version(t, snaptest.OpenDir(t, table), -1)
	if got := schemaString(s.Schema); got != "id:long,b:boolean,i1:byte,i2:short,i4:integer,u1:short,u2:integer,u4:long,u8:long,h:float,f:float,d:double,s:binary,u:string,img:binary,v:binary" {
		t.Fatalf("schema %s", got)
	}
	rows := snaptest.LiveRows(t, table)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	r0, r1 := rows[0], rows[1]
	want0 := map[string]any{"id": int64(0), "b": true, "i1": int32(-5), "i2": int32(-300), "i4": int32(70000), "u1": int32(200),
		"u2": int32(60000), "u4": int64(4000000000), "u8": int64(1) << 62, "h": float32(1.5), "f": float32(0.25), "d": -2.5}
	for k, v := range want0 {
		if r0[k] != v {
			t.Errorf("record 0 %s = %#v, want %#v", k, r0[k], v)
		}
	}
	if string(r0["s"].([]byte)) != "ab" || string(r0["u"].([]byte)) != "hé" || !bytes.Equal(r0["img"].([]byte), []byte{1, 2, 3, 4, 5, 6}) || !bytes.Equal(r0["v"].([]byte), []byte{1, 2}) {
		t.Errorf("record 0 bytes: s %q u %q img %v v %v", r0["s"], r0["u"], r0["img"], r0["v"])
	}
	if r1["id"] != int64(1) || r1["i1"] != int32(127) || r1["i4"] != int32(-1) || r1["f"] != float32(-1e30) || r1["d"] != 1e300 ||
		string(r1["s"].([]byte)) != "abcd" || string(r1["u"].([]byte)) != "xyz" {
		t.Errorf("record 1: %v", r1)
	}
	if h := r1["h"].(float32); math.Abs(float64(h)+0.0001) > 1e-7 {
		t.Errorf("half -0.0001 read as %v", h)
	}
}

func TestNpyPlainArrays(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, dict string
		data       []byte
		schema     string
		check      func([]map[string]any) bool
	}{
		{"1-d big-endian int16", "{'descr': '>i2', 'fortran_order': False, 'shape': (3,), }", []byte{0, 1, 0xff, 0xfe, 0, 3},
			"id:long,data:short", func(r []map[string]any) bool {
				return len(r) == 3 && r[0]["data"] == int32(1) && r[1]["data"] == int32(-2) && r[2]["id"] == int64(2)
			}},
		{"2-d uint8", "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2), }", []byte{1, 2, 3, 4, 5, 6},
			"id:long,data:binary", func(r []map[string]any) bool {
				return len(r) == 3 && bytes.Equal(r[1]["data"].([]byte), []byte{3, 4})
			}},
		{"aligned with padding", "{'descr': [('a', '|u1'), ('', '|V7'), ('b', '<i8')], 'fortran_order': False, 'shape': (2,), }",
			[]byte{1, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0},
			"id:long,a:short,b:long", func(r []map[string]any) bool {
				return len(r) == 2 && r[1]["a"] == int32(2) && r[1]["b"] == int64(20)
			}},
		{"empty", "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }", nil,
			"id:long,data:double", func(r []map[string]any) bool { return len(r) == 0 }},
		{"gzipped", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40},
			"id:long,data:float", func(r []map[string]any) bool { return len(r) == 2 && r[1]["data"] == float32(2) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npy")
			if c.name == "gzipped" {
				src += ".gz"
			}
			writeNpy(t, src, c.dict, c.data)
			table := filepath.Join(dir, "t-"+filepath.Base(src))
			if _, err := importPath(t, src, table, writer.Options{}); err != nil {
				t.Fatal(err)
			}
			if got := schemaString(snaptest.Version(t, snaptest.OpenDir(t, table), -1).Schema); got != c.schema {
				t.Fatalf("schema %s", got)
			}
			if rows := snaptest.LiveRows(t, table); !c.check(rows) {
				t.Fatalf("rows %v", rows)
			}
		})
	}
}

func TestNpyIDField(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "ids.npy")
	writeNpy(t, src, "{'descr': [('x', '<f8'), ('id', '<u4')], 'fortran_order': False, 'shape': (2,), }",
		[]byte{0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0})
	table := filepath.Join(dir, "t")
	for range 2 { // kept as they are, also on append
		if _, err := importPath(t, src, table, writer.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := schemaString(snaptest.Version(t, snaptest.OpenDir(t, table), -1).Schema); got != "x:double,id:long" {
		t.Fatalf("schema %s", got)
	}
	var ids []int64
	for _, r := range snaptest.LiveRows(t, table) {
		ids = append(ids, r["id"].(int64))
	}
	if len(ids) != 4 || ids[0]+ids[1]+ids[2]+ids[3] != 32 {
		t.Fatalf("ids %v", ids)
	}
}

func TestNpyErrors(t *testing.T) {
	dir := t.TempDir()
	hdr := func(descr string) string {
		return "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }"
	}
	for _, c := range []struct {
		name, dict string
		raw        []byte // the whole file, instead of dict
		data       []byte
		want       string
	}{
		{name: "fortran order", dict: "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data: make([]byte, 16), want: "fortran_order True is not supported"},
		{name: "float sub-array", dict: hdr("[('px', '<f4', (3,))]"), data: make([]byte, 12), want: `field "px": sub-array [3] of <f4 is not supported`},
		{name: "object", dict: hdr("'|O'"), data: make([]byte, 8), want: `type "|O" is not supported`},
		{name: "datetime", dict: hdr("[('t', '<M8[ns]')]"), data: make([]byte, 8), want: `field "t": type "<M8[ns]" is not supported`},
		{name: "nested", dict: hdr("[('p', [('x', '<f4')])]"), data: make([]byte, 4), want: `field "p": nested structured types are not supported`},
		{name: "float id", dict: hdr("[('id', '<f4')]"), data: make([]byte, 4), want: `field "id" (<f4) must be an integer`},
		{name: "u8 overflow", dict: hdr("[('n', '<u8')]"), data: bytes.Repeat([]byte{0xff}, 8), want: `uint64 value 18446744073709551615 does not fit in a long`},
		{name: "truncated data", dict: "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", data: make([]byte, 20), want: "truncated: the header announces 3 records, the data holds 2"},
		{name: "garbage header", dict: "{'descr': '<i8', 'fortran_order': False, 'shape': (3,", want: "npy header:"},
		{name: "not a dict", dict: "[1, 2]", want: "npy header: not a dict"},
		{name: "no shape", dict: "{'descr': '<i8', 'fortran_order': False}", want: "shape missing"},
		{name: "bad version", raw: append([]byte(npyMagic+"\x09\x00"), make([]byte, 10)...), want: "npy format version 9.0 is not supported"},
		{name: "header length past the end", raw: []byte(npyMagic + "\x01\x00\xff\x00{'descr'"), want: "npy header: truncated"},
		{name: "case clash", dict: hdr("[('ID', '<i8')]"), data: make([]byte, 8), want: `columns "id" and "ID" differ only in case`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npy")
			if c.raw != nil {
				os.WriteFile(src, c.raw, 0o644)
			} else {
				writeNpy(t, src, c.dict, c.data)
			}
			_, err := importPath(t, src, filepath.Join(dir, "t-"+c.name), writer.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if _, serr := os.Stat(filepath.Join(dir, "t-"+c.name, "_delta_log")); serr == nil && c.name != "u8 overflow" {
				t.Errorf("a failed import left a log")
			}
		})
	}
}

func TestPyLiteral(t *testing.T) {
	v, err := parsePyLiteral(`{"a": [1, -2, (3,)], 'b': True, 'c': None, 'd': 'x\'y', 'e': (), 'f': 5L}`)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if l := m["a"].([]any); len(l) != 3 || l[1] != int64(-2) || len(l[2].([]any)) != 1 {
		t.Errorf("a = %v", m["a"])
	}
	if m["b"] != true || m["c"] != nil || m["d"] != "x'y" || len(m["e"].([]any)) != 0 || m["f"] != int64(5) {
		t.Errorf("parsed %v", m)
	}
	for _, bad := range []string{"", "{", "{1: 2}", "[1 2]", "'open", "{'a': 1} x", strings.Repeat("[", 100)} {
		if _, err := parsePyLiteral(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestNpyStructured2D(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "grid.npy")
	writeNpy(t, src, "{'descr': [('v', '|u1')], 'fortran_order': False, 'shape': (2, 3), }", []byte{1, 2, 3, 4, 5, 6})
	table := filepath.Join(dir, "t")
	res, err := importPath(t, src, table, writer.Options{})
	if err != nil || res.Rows != 6 {
		t.Fatalf("%+v %v", res, err)
	}
	if rows := snaptest.LiveRows(t, table); rows[5]["v"] != int32(6) {
		t.Fatalf("rows %v", rows)
	}
}
