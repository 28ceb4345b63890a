package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

const testSchema = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":true,"metadata":{}},
{"name":"split","type":"string","nullable":true,"metadata":{}},
{"name":"score","type":"double","nullable":true,"metadata":{}},
{"name":"f32","type":"float","nullable":true,"metadata":{}},
{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
{"name":"day","type":"date","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"price","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"blob","type":"binary","nullable":true,"metadata":{}},
{"name":"Mapped","type":"integer","nullable":true,"metadata":{"delta.columnMapping.physicalName":"col-7"}},
{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}}]}`

func testSnap(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	return &snapshot.Snapshot{Schema: s, Metadata: snapshot.Metadata{PartitionColumns: []string{"split"},
		Configuration: map[string]string{"delta.columnMapping.mode": "name"}}}
}

func bind(t *testing.T, expr string) (*Filter, error) {
	t.Helper()
	e, err := Parse(expr)
	if err != nil {
		return nil, err
	}
	return Bind(e, testSnap(t))
}

// TestRefusals: what is not supported is refused with a message naming
// the part at fault, never a panic, and within bounds of time and stack.
func TestRefusals(t *testing.T) {
	deep := strings.Repeat("(", 10000) + "id = 1" + strings.Repeat(")", 10000)
	nots := strings.Repeat("NOT ", 10000) + "id = 1"
	for _, c := range []struct{ expr, want string }{
		{"", "empty"},
		{"nope = 1", `no column "nope"`},
		{"id = 'abc'", "column id is long; 'abc' at offset 5 is not a number"},
		{"split = 7", "column split is string; 7 at offset 8 is not a string"},
		{"ok = 1", "not TRUE or FALSE"},
		{"day = TIMESTAMP '2024-01-01 10:00:00'", "a timestamp"},
		{"day = '2024-13-01'", "not a date"},
		{"lower(split) = 'a'", "function calls (lower("},
		{"id IN (SELECT id FROM t)", "subqueries"},
		{"EXISTS (SELECT 1)", "subqueries"},
		{"id + 1 = 2", "arithmetic"},
		{"id = score", "compares two columns"},
		{"1 = 1", "compares two literals"},
		{"split LIKE 'a%'", "LIKE at offset 6 is not supported"},
		{"split NOT LIKE 'a%'", "NOT LIKE"},
		{"ok IS TRUE", "IS TRUE"},
		{"id <=> 1", "<=>"},
		{"CAST(id AS string) = '1'", "CAST"},
		{"tags = 'a'", "column tags is array<string>"},
		{"a.b = 1", "nested fields"},
		{"id = 1 AND", "ends"},
		{"id = 1)", "unexpected"},
		{"(id = 1", "ends where ) to close"},
		{"split = 'abc", "unterminated quote"},
		{"id = 12abc", "is not a number"},
		{"id", "column id is long, not a condition"},
		{"'a'", "is not a condition"},
		{"id IN (1, id)", "only literals"},
		{"id = 1 ; DROP TABLE t", "unexpected"},
		{deep, "nests deeper than 64"},
		{nots, "nests deeper than 64"},
		{"split = '\xff'", "invalid UTF-8"},
		{"id = 1" + strings.Repeat(" ", MaxText), "more than"},
	} {
		start := time.Now()
		_, err := bind(t, c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%.60q: got %v, want an error containing %q", c.expr, err, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.60q: took %v", c.expr, d)
		}
	}
}

// TestHugeIn: a long IN list (and a long OR chain) is accepted, matched
// through a set, and its key is independent of the list's order.
func TestHugeIn(t *testing.T) {
	var a, b, or []string
	for i := range 100000 {
		a = append(a, fmt.Sprint(i*2))
		b = append(b, fmt.Sprint((99999-i)*2))
	}
	for i := range 5000 {
		or = append(or, fmt.Sprintf("id = %d", i))
	}
	fa, err := bind(t, "id IN ("+strings.Join(a, ",")+")")
	if err != nil {
		t.Fatal(err)
	}
	fb, err := bind(t, "id IN ("+strings.Join(b, ",")+")")
	if err != nil {
		t.Fatal(err)
	}
	if fa.Key() != fb.Key() {
		t.Error("the same IN list in another order has another key")
	}
	fo, err := bind(t, strings.Join(or, " OR "))
	if err != nil {
		t.Fatal(err)
	}
	ints := []int64{0, 1, 2, 199998, 199999, 200000, -2}
	batch := &scan.Batch{Rows: make([]int64, len(ints)), Cols: []scan.Vector{{Kind: scan.KindInt, Int: ints}}}
	keep := make([]bool, len(ints))
	fa.Match(batch, []int{0}, keep)
	if fmt.Sprint(keep) != "[true false true true false false false]" {
		t.Errorf("IN over a set: %v", keep)
	}
	fo.Match(batch, []int{0}, keep)
	if fmt.Sprint(keep) != "[true true true false false false false]" {
		t.Errorf("OR chain: %v", keep)
	}
}

// TestRowSemantics: SQL's three-valued logic and the comparisons of each
// type, on rows as scan gives them.
func TestRowSemantics(t *testing.T) {
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	ts := time.Date(2024, 5, 1, 12, 30, 0, 500, time.UTC)
	dec := scan.DecimalFromInt64(1999, 2) // 19.99
	rows := [][]any{
		// id, split, score, f32, ok, day, ts, price, blob, Mapped
		{int64(1), "train", 0.9, float32(0.1), true, day, ts, dec, []byte{1, 2}, int32(5)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(-3), "test", mathNaN(), float32(2.5), false, day.AddDate(0, 0, 1), ts.Add(time.Second), scan.DecimalFromInt64(-5, 2), []byte{}, int32(-1)},
	}
	for _, c := range []struct {
		expr string
		want string // rows kept
	}{
		{"id = 1", "100"},
		{"id <> 1", "001"},
		{"NOT (id = 1)", "001"},
		{"id IS NULL", "010"},
		{"id IS NOT NULL AND split = 'train'", "100"},
		{"id = 1 OR id IS NULL", "110"},
		{"id = NULL", "000"},
		{"NOT (id = NULL)", "000"},
		{"id IN (1, -3)", "101"},
		{"id NOT IN (1, NULL)", "000"},
		{"id NOT IN (1)", "001"},
		{"id BETWEEN -3 AND 0", "001"},
		{"id NOT BETWEEN -3 AND 0", "100"},
		{"id > 0.5", "100"},
		{"id = 1.0", "100"},
		{"id < -2.5", "001"},
		{"ID = 1", "100"},        // case-insensitive column
		{"`id` = 1", "100"},      // quoted
		{`"Mapped" >= 5`, "100"}, // column mapping: logical name
		{"score > 1e9", "001"},   // NaN is greatest
		{"score = 0.9", "100"},
		{"f32 = 0.1", "100"}, // the literal rounded to float
		{"f32 < 0.1", "000"},
		{"ok", "100"},
		{"NOT ok", "001"},
		{"ok = FALSE", "001"},
		{"day = DATE '2024-05-01'", "100"},
		{"day > '2024-05-01'", "001"},
		{"ts = TIMESTAMP '2024-05-01 12:30:00.0000005'", "100"}, // microseconds
		{"ts > '2024-05-01T12:30:00Z'", "001"},
		{"ts >= DATE '2024-05-01'", "101"},
		{"ts < '2024-05-01 14:30:01+02:00'", "100"},
		{"price = 19.99", "100"},
		{"price < 0", "001"},
		{"price > 19.989", "100"},
		{"blob = X'0102'", "100"},
		{"blob < X'01'", "001"},
		{"split >= 't'", "101"},
		{"split = 'it''s'", "000"},
		{"TRUE", "111"},
		{"FALSE OR NULL", "000"},
		{"NOT NOT id = 1", "100"},
		{"id = 1 AND (split = 'train' OR split = 'x') AND NOT ok IS NULL", "100"},
		{"-3 = id", "001"},
		{"5 < Mapped", "000"},
	} {
		f, err := bind(t, c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		at := make([]int, len(f.cols))
		names := testSnap(t).Schema.Names()
		for k, col := range f.cols {
			for i, n := range names {
				if n == col.Name {
					at[k] = i
				}
			}
		}
		got := ""
		for _, r := range rows {
			if f.MatchRow(r, at) {
				got += "1"
			} else {
				got += "0"
			}
		}
		if got != c.want {
			t.Errorf("%q: kept %s, want %s", c.expr, got, c.want)
		}
	}
}

// TestDecide: partition values prune exactly; statistics skip only where
// they bound the values exactly; a file with neither is read.
func TestDecide(t *testing.T) {
	snap := testSnap(t)
	str := func(s string) *string { return &s }
	file := func(split *string, stats string) *snapshot.AddFile {
		return &snapshot.AddFile{Path: "f", PartitionValues: map[string]*string{"split": split}, Stats: stats}
	}
	stats := `{"numRecords":10,"minValues":{"id":5,"score":0.5,"ts":"2024-05-01T00:00:00.000Z","col-7":1,"split":"zz"},` +
		`"maxValues":{"id":9,"score":0.7,"ts":"2024-05-01T00:00:00.000Z","col-7":1},"nullCount":{"id":0,"score":2,"ts":0,"col-7":10}}`
	for _, c := range []struct {
		expr string
		f    *snapshot.AddFile
		want Decision
	}{
		{"split = 'train'", file(str("train"), ""), All},
		{"split = 'train'", file(str("test"), ""), Pruned},
		{"split = 'train'", file(nil, ""), Pruned},
		{"split IS NULL", file(nil, ""), All},
		{"split IS NULL", file(str(""), ""), All}, // an empty value is a null
		{"split <> 'train'", file(nil, ""), Pruned},
		{"split = 'train' AND id > 100", file(str("test"), stats), Pruned},
		{"split = 'train' AND id > 100", file(str("train"), stats), Skipped},
		// Statistics never say "every row matches": rows are evaluated.
		{"split = 'train' AND id > 3", file(str("train"), stats), Some},
		{"split = 'train' OR id > 100", file(str("test"), stats), Skipped},
		{"id > 100", file(str("x"), ""), Some},          // no statistics
		{"id > 100", file(str("x"), "{not json"), Some}, // statistics that do not parse
		{"id > 100", file(str("x"), stats), Skipped},
		{"id < 5", file(str("x"), stats), Skipped},
		{"id <= 5", file(str("x"), stats), Some},
		{"id IN (1, 2, 10)", file(str("x"), stats), Skipped},
		{"id IN (1, 7)", file(str("x"), stats), Some},
		{"id NOT IN (1, 2)", file(str("x"), stats), Some},
		{"id IS NULL", file(str("x"), stats), Skipped},
		{"id BETWEEN 0 AND 100", file(str("x"), stats), Some},
		{"score < 0.5", file(str("x"), stats), Skipped},    // the minimum of a float bounds
		{"score > 0.7", file(str("x"), stats), Some},       // its maximum does not (NaN)
		{"score IS NOT NULL", file(str("x"), stats), Some}, // 2 nulls of 10
		{"Mapped IS NULL", file(str("x"), stats), Some},    // physical names; all 10 null
		{"Mapped IS NOT NULL", file(str("x"), stats), Skipped},
		{"Mapped = 1", file(str("x"), stats), Skipped},
		// Timestamps are written in milliseconds: bounds widened by one.
		{"ts > '2024-05-01T00:00:00.000500Z'", file(str("x"), stats), Some},
		{"ts > '2024-05-01T00:00:00.002Z'", file(str("x"), stats), Skipped},
		// A statistic of a partition column is not used over its value.
		{"split = 'a'", file(str("a"), stats), All},
		// A truncated string maximum bounds nothing.
		{"split > 'zz'", file(str("zzz"), ""), All},
	} {
		f, err := bind(t, c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := f.Decide(snap, c.f); got != c.want {
			t.Errorf("%q on %v %q: %v, want %v", c.expr, c.f.PartitionValues["split"] != nil, c.f.Stats, got, c.want)
		}
	}
}

// TestStringStatsTruncated: a string maximum of 32 characters or more may
// be a truncated prefix and is not used; a minimum always is.
func TestStringStatsTruncated(t *testing.T) {
	snap := testSnap(t)
	snap.Metadata.PartitionColumns = nil
	long := strings.Repeat("m", 32)
	stats := fmt.Sprintf(`{"numRecords":3,"minValues":{"split":"b"},"maxValues":{"split":%q},"nullCount":{"split":0}}`, long)
	for expr, want := range map[string]Decision{
		"split > '" + long + "'": Some,
		"split < 'a'":            Skipped,
	} {
		f, err := bind(t, expr)
		if err != nil {
			t.Fatal(err)
		}
		f.cols[0].Partition = false
		if got := f.Decide(snap, &snapshot.AddFile{Stats: stats}); got != want {
			t.Errorf("%q: %v, want %v", expr, got, want)
		}
	}
}

func mathNaN() float64 { var z float64; return z / z }
