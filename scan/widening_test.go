package scan

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/deltafs/deltafs/snapshot"
)

// kernelrs-type-widening: a row written before the columns were widened
// and one after, read at the widened version; and the narrow version.
func TestTypeWideningTable(t *testing.T) {
	tbl := snaptest.OpenDir(t, filepath.Join(testdataDir, "kernelrs-type-widening"))
	got := sorted(scanJSON(t, snaptest.Version(t, tbl, 2), nil))
	want := []string{
		`{"byte_long":1,"int_long":2,"float_double":3.4000000953674316,"byte_double":5,"short_double":6,"int_double":7,` +
			`"decimal_decimal_same_scale":123.45,"decimal_decimal_greater_scale":67.89000,"byte_decimal":1.0,"short_decimal":2.0,` +
			`"int_decimal":3.0,"long_decimal":4.0,"date_timestamp_ntz":"2024-09-09T00:00:00.000000"}`,
		`{"byte_long":9223372036854775807,"int_long":9223372036854775807,"float_double":1.234567890123,"byte_double":1.234567890123,` +
			`"short_double":1.234567890123,"int_double":1.234567890123,"decimal_decimal_same_scale":12345678901234.56,` +
			`"decimal_decimal_greater_scale":12345678901.23456,"byte_decimal":123.4,"short_decimal":12345.6,"int_decimal":1234567890.1,` +
			`"long_decimal":123456789012345678.9,"date_timestamp_ntz":"2024-09-09T12:34:56.123456"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("version 2:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	// The Go types are the table's, whatever the file holds.
	snap := snaptest.Version(t, tbl, 2)
	sc, _ := New(snap, []string{"byte_long", "float_double", "byte_double", "byte_decimal", "date_timestamp_ntz"})
	err := sc.All(t.Context(), func(_ *snapshot.AddFile, _ int64, row []any) error {
		if _, ok := row[0].(int64); !ok {
			t.Errorf("byte_long: %T", row[0])
		}
		if _, ok := row[1].(float64); !ok {
			t.Errorf("float_double: %T", row[1])
		}
		if _, ok := row[2].(float64); !ok {
			t.Errorf("byte_double: %T", row[2])
		}
		if d, ok := row[3].(Decimal); !ok || d.Scale() != 1 {
			t.Errorf("byte_decimal: %#v", row[3])
		}
		if _, ok := row[4].(time.Time); !ok {
			t.Errorf("date_timestamp_ntz: %T", row[4])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Before the change, the narrow types.
	v1 := scanJSON(t, snaptest.Version(t, tbl, 1), []string{"byte_long", "date_timestamp_ntz", "byte_decimal"})
	if len(v1) != 1 || v1[0] != `{"byte_long":1,"date_timestamp_ntz":"2024-09-09","byte_decimal":1}` {
		t.Errorf("version 1: %v", v1)
	}
}

// Widening on a generated file: every reading the converters allow, on
// values of the narrow physical types.
func TestTypeWideningConverters(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{
		"a_int8":    parquet.Int(8),
		"b_int32":   parquet.Int(32),
		"c_float":   parquet.Leaf(parquet.FloatType),
		"d_date":    parquet.Date(),
		"e_dec":     parquet.Decimal(2, 10, parquet.Int64Type),
		"f_int64":   parquet.Int(64),
		"g_uint32":  parquet.Uint(32),
		"h_ts_ms":   parquet.Timestamp(parquet.Millisecond),
		"i_ts_ns":   parquet.Timestamp(parquet.Nanosecond),
		"j_decfixd": parquet.Decimal(3, 20, parquet.FixedLenByteArrayType(9)),
		"k_decba":   parquet.Decimal(2, 30, parquet.ByteArrayType),
		"l_dec32":   parquet.Decimal(1, 5, parquet.Int32Type),
		"m_int96":   parquet.Leaf(parquet.Int96Type),
	})
	row := parquet.Row{
		lv(parquet.Int32Value(-5), 0, 0, 0),
		lv(parquet.Int32Value(70000), 0, 0, 1),
		lv(parquet.FloatValue(0.5), 0, 0, 2),
		lv(parquet.Int32Value(19000), 0, 0, 3),
		lv(parquet.Int64Value(12345), 0, 0, 4),
		lv(parquet.Int64Value(-9), 0, 0, 5),
		lv(parquet.Int32Value(-1), 0, 0, 6),
		lv(parquet.Int64Value(1500), 0, 0, 7),
		lv(parquet.Int64Value(1_000_000_001), 0, 0, 8),
		lv(parquet.FixedLenByteArrayValue([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}), 0, 0, 9),
		lv(parquet.ByteArrayValue([]byte{0x01, 0x00}), 0, 0, 10),
		lv(parquet.Int32Value(-1234), 0, 0, 11),
		// 1969-12-31T23:59:59.999999999Z: Julian day 2440587, nanos of day.
		lv(parquet.Int96Value(int96(2440587, 86399999999999)), 0, 0, 12),
	}
	data := writeParquet(t, schema, []parquet.Row{row})
	cases := []struct {
		col, typ, want string
	}{
		{"a_int8", "byte", `-5`},
		{"a_int8", "short", `-5`},
		{"a_int8", "long", `-5`},
		{"a_int8", "double", `-5`},
		{"a_int8", "decimal(4,1)", `-5.0`},
		{"b_int32", "long", `70000`},
		{"b_int32", "double", `70000`},
		{"b_int32", "decimal(12,2)", `70000.00`},
		{"c_float", "double", `0.5`},
		{"d_date", "timestamp_ntz", `"2022-01-08T00:00:00.000000"`},
		{"d_date", "date", `"2022-01-08"`},
		{"e_dec", "decimal(10,2)", `123.45`},
		{"e_dec", "decimal(12,4)", `123.4500`},
		{"e_dec", "decimal(38,20)", `123.45000000000000000000`},
		{"f_int64", "decimal(21,1)", `-9.0`},
		{"g_uint32", "long", `4294967295`},
		{"h_ts_ms", "timestamp", `"1970-01-01T00:00:01.500000Z"`},
		{"i_ts_ns", "timestamp", `"1970-01-01T00:00:01.000000Z"`},
		{"j_decfixd", "decimal(20,3)", `-0.002`},
		{"j_decfixd", "decimal(25,5)", `-0.00200`},
		{"k_decba", "decimal(30,2)", `2.56`},
		{"l_dec32", "decimal(5,1)", `-123.4`},
		{"l_dec32", "decimal(7,3)", `-123.400`},
		{"m_int96", "timestamp", `"1969-12-31T23:59:59.999999Z"`},
		{"m_int96", "timestamp_ntz", `"1969-12-31T23:59:59.999999"`},
	}
	var fields []string
	for i, c := range cases {
		fields = append(fields, "c"+itoa(int64(i))+":"+c.typ)
	}
	// Read each case's column under a distinct logical name through name
	// mapping, so one table covers every reading.
	sch, err := snapshot.ParseSchema(schemaJSON(fields...))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sch.Fields {
		sch.Fields[i].Metadata = map[string]any{snapshot.MetaPhysicalName: cases[i].col, snapshot.MetaColumnID: float64(i + 1)}
	}
	js, _ := sch.MarshalJSON()
	snap := writeTable(t, t.TempDir(), string(js), nil, map[string]string{"delta.columnMapping.mode": "name"},
		genFile{path: "a.parquet", data: data, numRecords: 1})
	rows := scanJSON(t, snap, nil)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, c := range cases {
		key := `"c` + itoa(int64(i)) + `":` + c.want
		if !strings.Contains(rows[0], key+",") && !strings.Contains(rows[0], key+"}") {
			t.Errorf("%s as %s: want %s in %s", c.col, c.typ, c.want, rows[0])
		}
	}
}

// int96 builds an INT96 timestamp from a Julian day and nanoseconds.
func int96(julianDay uint32, nanos uint64) deprecated.Int96 {
	return deprecated.Int96{uint32(nanos), uint32(nanos >> 32), julianDay}
}

func TestTypeMismatch(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{"a": parquet.String(), "b": parquet.Int(64), "c": parquet.Decimal(4, 10, parquet.Int64Type)})
	data := writeParquet(t, schema, []parquet.Row{{
		lv(parquet.ByteArrayValue([]byte("x")), 0, 0, 0), lv(parquet.Int64Value(1), 0, 0, 1), lv(parquet.Int64Value(1), 0, 0, 2),
	}})
	for _, c := range []struct{ field, want string }{
		{"a:long", "cannot read Parquet BYTE_ARRAY (STRING) as long"},
		{"b:integer", "cannot read Parquet INT64"},
		{"b:double", "cannot read Parquet INT64"},
		{"c:decimal(10,2)", "DECIMAL(10,4)) as decimal(10,2)"},
		{`a:{"type":"struct","fields":[]}`, "column a is primitive in the file"},
	} {
		snap := writeTable(t, t.TempDir(), schemaJSON(c.field), nil, nil, genFile{path: "a.parquet", data: data, numRecords: 1})
		sc, err := New(snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = sc.All(t.Context(), func(*snapshot.AddFile, int64, []any) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "version 0: a.parquet: ") {
			t.Errorf("%s: %v, want an error with %q", c.field, err, c.want)
		}
	}
}

func TestWideningSupported(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"byte", "short", true}, {"short", "integer", true}, {"integer", "long", true}, {"byte", "long", true},
		{"float", "double", true}, {"integer", "double", true}, {"short", "double", true}, {"long", "double", false},
		{"date", "timestamp_ntz", true}, {"date", "timestamp", false},
		{"decimal(10,2)", "decimal(12,4)", true}, {"decimal(10,2)", "decimal(20,2)", true},
		{"decimal(10,2)", "decimal(11,4)", false}, {"decimal(10,2)", "decimal(10,1)", false},
		{"byte", "decimal(4,1)", true}, {"integer", "decimal(10,0)", true}, {"integer", "decimal(10,1)", false},
		{"long", "decimal(20,0)", true}, {"long", "decimal(21,3)", false},
		{"long", "integer", false}, {"string", "long", false}, {"double", "float", false},
	} {
		if got := wideningSupported(c.from, c.to); got != c.ok {
			t.Errorf("%s -> %s: %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

// A recorded type change the reader does not support is refused by New,
// also on a nested field.
func TestUnsupportedTypeChange(t *testing.T) {
	for _, schema := range []string{
		`{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"long","toType":"integer"}]}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":{"type":"struct","fields":[{"name":"b","type":"long","nullable":true,` +
			`"metadata":{"delta.typeChanges":[{"fromType":"string","toType":"long"}]}}]},"nullable":true,"metadata":{}}]}`,
	} {
		st, err := snapshot.ParseSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(&snapshot.Snapshot{Version: 4, Schema: st}, nil)
		if err == nil || !strings.Contains(err.Error(), "unsupported type change") || strings.Contains(err.Error(), "version") { // the caller names the version
			t.Errorf("%s: %v", schema, err)
		}
	}
	st, _ := snapshot.ParseSchema(schemaJSON("v:variant"))
	if _, err := New(&snapshot.Snapshot{Schema: st}, nil); err == nil || !strings.Contains(err.Error(), "variant is not supported") {
		t.Errorf("variant: %v", err)
	}
}
