package scan

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/snapshot"
)

func sp(s string) *string { return &s }

func TestParsePartitionValue(t *testing.T) {
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}
	cases := []struct {
		typ  string
		raw  string
		want any
	}{
		{"string", "a b/%20%f😈", "a b/%20%f😈"},
		{"string", "null", "null"},
		{"binary", "\u0001\u0002\u0003", []byte{1, 2, 3}},
		{"boolean", "true", true},
		{"boolean", "false", false},
		{"boolean", "TRUE", true},
		{"long", "-9223372036854775808", int64(math.MinInt64)},
		{"long", "9223372036854775807", int64(math.MaxInt64)},
		{"integer", "-2147483648", int32(math.MinInt32)},
		{"short", "32767", int16(32767)},
		{"byte", "-128", int8(-128)},
		{"float", "1.5", float32(1.5)},
		{"float", "NaN", float32(math.NaN())},
		{"double", "0.1", 0.1},
		{"double", "-Infinity", math.Inf(-1)},
		{"double", "1.0E10", 1e10},
		{"decimal(10,2)", "123.45", DecimalFromInt64(12345, 2)},
		{"decimal(10,2)", "-0.5", DecimalFromInt64(-50, 2)},
		{"decimal(10,2)", "7", DecimalFromInt64(700, 2)},
		{"decimal(5,0)", "1E+3", DecimalFromInt64(1000, 0)},
		{"decimal(38,18)", "12345678901234567890.123456789012345678", mustDecimal(t, "12345678901234567890123456789012345678", 18)},
		{"date", "2021-09-08", utc("2021-09-08T00:00:00Z")},
		{"date", "1970-01-01", utc("1970-01-01T00:00:00Z")},
		{"timestamp", "2021-09-08 11:11:11", utc("2021-09-08T11:11:11Z")},
		{"timestamp", "1970-01-01 00:00:00.123456", utc("1970-01-01T00:00:00.123456Z")},
		{"timestamp", "1970-01-01T00:00:00.123456Z", utc("1970-01-01T00:00:00.123456Z")},
		{"timestamp", "2021-01-01T10:00:00+02:00", utc("2021-01-01T08:00:00Z")},
		{"timestamp_ntz", "2021-09-08 11:11:11.5", utc("2021-09-08T11:11:11.5Z")},
		{"timestamp_ntz", "2021-09-08 11:11:11", utc("2021-09-08T11:11:11Z")},
	}
	for _, c := range cases {
		got, err := ParsePartitionValue(&snapshot.PrimitiveType{Name: c.typ}, sp(c.raw))
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.raw, err)
			continue
		}
		if f, ok := c.want.(float32); ok && f != f {
			if g, ok := got.(float32); !ok || g == g {
				t.Errorf("%s %q = %#v, want NaN", c.typ, c.raw, got)
			}
			continue
		}
		if d, ok := c.want.(Decimal); ok {
			if g, ok := got.(Decimal); !ok || g.String() != d.String() {
				t.Errorf("%s %q = %v, want %v", c.typ, c.raw, got, d)
			}
			continue
		}
		if tm, ok := c.want.(time.Time); ok {
			if g, ok := got.(time.Time); !ok || !g.Equal(tm) || g.Location() != time.UTC {
				t.Errorf("%s %q = %v, want %v", c.typ, c.raw, got, tm)
			}
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q = %#v, want %#v", c.typ, c.raw, got, c.want)
		}
	}
}

func mustDecimal(t *testing.T, digits string, scale int) Decimal {
	d, err := parseDecimal(digits, 38, 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewDecimal(d.Unscaled(), scale)
}

func TestParsePartitionValueNulls(t *testing.T) {
	for _, typ := range []string{"string", "binary", "boolean", "long", "integer", "short", "byte", "float",
		"double", "decimal(10,2)", "date", "timestamp", "timestamp_ntz"} {
		pt := &snapshot.PrimitiveType{Name: typ}
		for _, raw := range []*string{nil, sp("")} {
			got, err := ParsePartitionValue(pt, raw)
			if err != nil || got != nil {
				t.Errorf("%s %v: %#v, %v; want nil", typ, raw, got, err)
			}
		}
	}
}

func TestParsePartitionValueErrors(t *testing.T) {
	for _, c := range [][2]string{
		{"long", "1.5"}, {"integer", "2147483648"}, {"short", "40000"}, {"byte", "128"},
		{"boolean", "yes"}, {"double", "one"}, {"date", "2021-13-01"}, {"timestamp", "noon"},
		{"decimal(5,2)", "1.234"}, {"decimal(3,0)", "12345"}, {"decimal(5,2)", "x"},
	} {
		if v, err := ParsePartitionValue(&snapshot.PrimitiveType{Name: c[0]}, sp(c[1])); err == nil {
			t.Errorf("%s %q = %#v, want an error", c[0], c[1], v)
		}
	}
	if _, err := ParsePartitionValue(&snapshot.ArrayType{ElementType: &snapshot.PrimitiveType{Name: "long"}}, sp("1")); err == nil {
		t.Error("array partition column: want an error")
	}
}

// The golden table with twelve partition columns of many types: typed Go
// values, and nulls where every partition value is null.
func TestPartitionValuesTable(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, testdataDir+"/golden-data-reader-partition-values"), -1)
	cols := []string{"as_int", "as_long", "as_byte", "as_short", "as_boolean", "as_float", "as_double",
		"as_string", "as_string_lit_null", "as_date", "as_timestamp", "as_big_decimal", "value"}
	sc, err := New(snap, cols)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = sc.All(t.Context(), func(_ *snapshot.AddFile, _ int64, row []any) error {
		v := row[len(row)-1].(string)
		seen[v] = true
		switch v {
		case "1":
			want := []any{int32(1), int64(1), int8(1), int16(1), false, float32(1), float64(1), "1", "null",
				time.Date(2021, 9, 8, 0, 0, 0, 0, time.UTC), time.Date(2021, 9, 8, 11, 11, 11, 0, time.UTC), DecimalFromInt64(1, 0)}
			for i, w := range want {
				if !reflect.DeepEqual(row[i], w) {
					t.Errorf("%s = %#v, want %#v", cols[i], row[i], w)
				}
			}
		case "2":
			for i := range len(row) - 1 {
				if row[i] != nil {
					t.Errorf("null partition: %s = %#v", cols[i], row[i])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Errorf("rows %v, want 0, 1, 2", seen)
	}
}

// Escaped characters and emoji in partition values come out unescaped,
// and the binary partition column as bytes.
func TestPartitionValuesEscaped(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, testdataDir+"/dat-multi_partitioned"), 2)
	got := sorted(scanJSON(t, snap, nil))
	want := []string{
		`{"letter":"/%20%f","date":"1970-01-01","data":"aGVsbG8=","number":6}`,
		`{"letter":"b","date":"1970-01-01","data":"8J+YiA==","number":7}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
