package filter

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// noParts is testSnap without partition columns: every column's file
// decision comes from its statistics.
func noParts(t *testing.T) *snapshot.Snapshot {
	s := testSnap(t)
	s.Metadata.PartitionColumns = nil
	return s
}

func decide(t *testing.T, expr, stats string) Decision {
	t.Helper()
	e, err := Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	f, err := Bind(e, noParts(t))
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return f.Decide(noParts(t), &snapshot.AddFile{Path: "f", Stats: stats})
}

// TestFloatStatsAsSparkWrites: a float column's statistics are the
// shortest decimal of a float32 (0.7 for the float nearest 0.7, which is
// below 0.7 as a double), and a double column widened from float keeps
// such statistics in its older files: a file holding the value must not
// be skipped by any comparison that value satisfies.
func TestFloatStatsAsSparkWrites(t *testing.T) {
	f07 := float64(float32(0.7)) // 0.699999988079071: what the file holds
	for _, c := range []struct {
		expr, stats string
	}{
		{"f32 = 0.7", `{"numRecords":1,"minValues":{"f32":0.7},"maxValues":{"f32":0.7},"nullCount":{"f32":0}}`},
		{"f32 <= 0.7", `{"numRecords":1,"minValues":{"f32":0.7},"maxValues":{"f32":0.7},"nullCount":{"f32":0}}`},
		{"f32 IN (0.7, 3)", `{"numRecords":1,"minValues":{"f32":0.7},"maxValues":{"f32":0.7},"nullCount":{"f32":0}}`},
		// As a checkpoint's stats_parsed renders it: the float32 as a double.
		{"f32 = 0.7", `{"numRecords":1,"minValues":{"f32":0.699999988079071},"nullCount":{"f32":0}}`},
		// A double column widened from float: its old files' statistics.
		{fmt.Sprintf("score = %v", f07), `{"numRecords":1,"minValues":{"score":0.7},"maxValues":{"score":0.7},"nullCount":{"score":0}}`},
		{"score < 0.7", `{"numRecords":1,"minValues":{"score":0.7},"maxValues":{"score":0.7},"nullCount":{"score":0}}`},
		{"score BETWEEN 0.6999 AND 0.69999999", `{"numRecords":1,"minValues":{"score":0.7},"maxValues":{"score":0.7},"nullCount":{"score":0}}`},
	} {
		if d := decide(t, c.expr, c.stats); d == Skipped {
			t.Errorf("%q over %s: skipped, but the file's value %v matches", c.expr, c.stats, f07)
		}
	}
	// And still skips what no reading of the statistic can match.
	if d := decide(t, "f32 < 0.6", `{"numRecords":1,"minValues":{"f32":0.7},"nullCount":{"f32":0}}`); d != Skipped {
		t.Errorf("f32 < 0.6 over min 0.7: %v, want skipped", d)
	}
}

// TestStatsThatLieAdmitNothing: statistics that say every row matches
// leave the rows to be evaluated (Some), so a file whose rows contradict
// them serves none that fail the predicate.
func TestStatsThatLieAdmitNothing(t *testing.T) {
	lie := `{"numRecords":2,"minValues":{"id":100,"day":"2030-01-01","price":100},"maxValues":{"id":200,"day":"2030-01-02","price":200},"nullCount":{"id":0,"day":0,"price":0}}`
	for _, expr := range []string{"id >= 50", "id IS NOT NULL", "id NOT IN (1, 2)", "day > DATE '2000-01-01'", "price BETWEEN 50 AND 300", "NOT (id < 50)"} {
		if d := decide(t, expr, lie); d != Some {
			t.Errorf("%q over lying statistics: %v, want some (rows evaluated)", expr, d)
		}
	}
}

// TestZeroCountIsRead: a file claiming no rows is not skipped for it:
// it is read, and its rows checked against the claim, as without a filter.
func TestZeroCountIsRead(t *testing.T) {
	for _, stats := range []string{
		`{"numRecords":0}`,
		`{"numRecords":0,"minValues":{},"maxValues":{},"nullCount":{"id":0}}`,
	} {
		if d := decide(t, "id >= 0", stats); d == Skipped {
			t.Errorf("a file claiming 0 rows (%s) is skipped", stats)
		}
	}
}

// TestNumberLimits: literals past the limits are refused at once, in one
// line naming the limit; literals at the edges of every type still bind.
func TestNumberLimits(t *testing.T) {
	huge := func(n int, lit string) string {
		return "id IN (" + strings.TrimSuffix(strings.Repeat(lit+", ", n), ", ") + ")"
	}
	for _, c := range []struct{ expr, want string }{
		{huge(200, "1e999999"), "exponent beyond ±400"},
		{huge(2000, "1e999999"), "exponent beyond ±400"},
		{huge(2000, "-9e-99999999999999999999"), "exponent beyond ±400"},
		{"score = 1e401", "exponent beyond ±400"},
		{"id = " + strings.Repeat("9", 101), "101 digits, more than 100"},
		{"price = 0." + strings.Repeat("0", 200) + "1", "digits, more than 100"},
	} {
		start := time.Now()
		_, err := bind(t, c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want an error with %q", c.expr, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || len(err.Error()) > 200) {
			t.Errorf("%.40q: the error is not one short line: %q", c.expr, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%.40q: refused after %v", c.expr, d)
		}
	}
	for _, expr := range []string{
		"score = 1.7976931348623157e308", "score = 4.9e-324", "score < -1e400",
		"score > 1E+400", "id = 9223372036854775807", "id > -9223372036854775809",
		"price = 12345678.99", "id = 0e-400", "id = 1e400",
		"price = 9" + strings.Repeat("9", 37), // decimal(38, 0)'s edge
	} {
		if _, err := bind(t, expr); err != nil {
			t.Errorf("%q: %v", expr, err)
		}
	}
}

// TestInSetEveryKind: a long IN list is a set for every column kind and
// every mix of literals, and agrees with comparing value by value.
func TestInSetEveryKind(t *testing.T) {
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		col  string
		lits []string
		row  []any // values to look up: the first is in the list, the others not
	}{
		{"id", append([]string{"7", "2.5", "1e30", "-0"}, seq(20, "%d00")...), []any{int64(7), int64(2), int64(-1), int64(30)}},
		{"id", []string{"0", "2.5", "1e30", "3", "4", "5", "6", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17"}, []any{int64(0), int64(1)}},
		{"score", append([]string{"-0.0", "0.5"}, seq(20, "%d.25")...), []any{0.0, 0.25, 1.0}},
		{"score", append([]string{"0.5"}, seq(20, "%d.25")...), []any{0.5, math.Copysign(0, -1)}},
		{"f32", append([]string{"0.1"}, seq(20, "%d.5")...), []any{float32(0.1), float32(0.2)}},
		{"price", append([]string{"19.99", "19.990", "7"}, seq(20, "%d.01")...), []any{scan.DecimalFromInt64(1999, 2), scan.DecimalFromInt64(1998, 2)}},
		{"day", append([]string{"DATE '2024-05-01'"}, seq(20, "DATE '2023-01-%02d'")...), []any{day, day.AddDate(0, 0, 1)}},
		{"ts", append([]string{"TIMESTAMP '2024-05-01 00:00:00'"}, seq(20, "'2023-01-%02d 10:00:00'")...), []any{day, day.Add(time.Microsecond)}},
		{"split", append([]string{"'train'"}, seq(20, "'s%d'")...), []any{"train", "s99"}},
		{"blob", append([]string{"X'01'"}, seq(20, "X'%04x'")...), []any{[]byte{1}, []byte{2}}},
		{"ok", append([]string{"TRUE"}, repeat(20, "TRUE")...), []any{true, false}},
	} {
		expr := c.col + " IN (" + strings.Join(c.lits, ", ") + ")"
		f, err := Bind(mustParse(t, expr), noParts(t))
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		n := f.root.(*inNode)
		if n.set == nil {
			t.Errorf("%s IN (%d values): searched, not a set", c.col, len(n.list))
		}
		k := f.cols[0].kind
		for i, x := range c.row {
			v, ok := fromGo(k, x)
			if !ok {
				t.Fatalf("%s: %T is not of the column's kind", c.col, x)
			}
			linear := false
			for _, l := range n.list {
				linear = linear || compare(k, v, l) == 0
			}
			if got := n.contains(k, v); got != linear || got != (i == 0) {
				t.Errorf("%s IN (...) of %v: set %v, value by value %v, want %v", c.col, x, got, linear, i == 0)
			}
		}
	}
}

func seq(n int, format string) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(format, i+1))
	}
	return out
}

func repeat(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func mustParse(t testing.TB, expr string) *Expr {
	e, err := Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return e
}

// BenchmarkInList: a row's lookup costs about the same for 10 values as
// for 10,000, whatever the column's kind.
func BenchmarkInList(b *testing.B) {
	for _, col := range []struct{ name, format string }{{"id", "%d"}, {"score", "%d.5"}, {"price", "%d.25"}, {"split", "'v%d'"}} {
		for _, n := range []int{10, 10000} {
			b.Run(fmt.Sprintf("%s/%d", col.name, n), func(b *testing.B) {
				lits := seq(n, col.format)
				if n < 16 {
					lits = append(lits, repeat(16-n, lits[0])...) // the set, not the search
				}
				f, err := Bind(mustParse(b, col.name+" IN ("+strings.Join(lits, ",")+")"), noPartsB(b))
				if err != nil {
					b.Fatal(err)
				}
				n := f.root.(*inNode)
				k := f.cols[0].kind
				var v value
				switch k {
				case kInt:
					v = value{i: -1}
				case kFloat:
					v = value{f: -1}
				case kDec:
					v, _ = fromGo(k, scan.DecimalFromInt64(-1, 0))
				default:
					v = value{b: []byte("none")}
				}
				b.ResetTimer()
				for range b.N {
					n.contains(k, v)
				}
			})
		}
	}
}

func noPartsB(b *testing.B) *snapshot.Snapshot {
	s, err := snapshot.ParseSchema(testSchema)
	if err != nil {
		b.Fatal(err)
	}
	return &snapshot.Snapshot{Schema: s, Metadata: snapshot.Metadata{Configuration: map[string]string{"delta.columnMapping.mode": "name"}}}
}

// FuzzFilter: an expression generated from the fuzzer's bytes over rows
// generated from them too. The filter's row evaluation must agree with a
// reference written here (SQL's three-valued logic over Go values), and
// its file decision over statistics computed truthfully from the rows
// must never skip a file holding a matching row (nor say All of one
// holding a row that fails). Arbitrary text must parse or fail, never
// panic.
func FuzzFilter(f *testing.F) {
	f.Add([]byte("id > 3"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("score = 0.5 OR id IN (1,2,NULL)"), []byte{9, 9, 0, 0, 1, 200, 17, 3})
	f.Add([]byte("NOT (split <> 'b') AND id BETWEEN 1 AND 4"), []byte{0, 1, 0, 2, 0, 3, 0, 4})
	f.Fuzz(func(t *testing.T, text []byte, seed []byte) {
		// Arbitrary text: parse and bind may fail, never panic.
		if e, err := Parse(string(text)); err == nil {
			_, _ = Bind(e, noParts(t))
		}
		if len(seed) < 4 {
			return
		}
		g := &gen{b: seed}
		rows := g.rows()
		x := g.expr(3)
		e, err := Parse(x.text)
		if err != nil {
			t.Fatalf("%q: %v", x.text, err)
		}
		flt, err := Bind(e, noParts(t))
		if err != nil {
			t.Fatalf("%q: %v", x.text, err)
		}
		at := colPositions(t, flt)
		anyTrue, allTrue := false, true
		for _, r := range rows {
			want := x.eval(r) == tTrue
			if got := flt.MatchRow(r, at); got != want {
				t.Fatalf("%q on %v: MatchRow %v, reference %v", x.text, r, got, want)
			}
			anyTrue = anyTrue || want
			allTrue = allTrue && want
		}
		d := flt.Decide(noParts(t), &snapshot.AddFile{Path: "f", Stats: truthfulStats(rows)})
		if d == Skipped && anyTrue {
			t.Fatalf("%q: the file is skipped, but a row matches (%v)", x.text, rows)
		}
		if d == All && !allTrue {
			t.Fatalf("%q: every row said to match, but one does not", x.text)
		}
	})
}

// colPositions maps a filter's columns to their place in a testSchema row.
func colPositions(t *testing.T, f *Filter) []int {
	names := testSnap(t).Schema.Names()
	at := make([]int, len(f.cols))
	for k, col := range f.cols {
		for i, n := range names {
			if n == col.Name {
				at[k] = i
			}
		}
	}
	return at
}

// gen draws rows and expressions over id (long), split (string) and
// score (double) from a byte string.
type gen struct {
	b []byte
	i int
}

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[g.i%len(g.b)]
	g.i++
	return c
}

func (g *gen) rows() [][]any {
	n := 1 + int(g.byte()%6)
	rows := make([][]any, n)
	for i := range rows {
		r := make([]any, 10)
		r[0], r[1], r[2] = g.val(0), g.val(1), g.val(2)
		rows[i] = r
	}
	return rows
}

// val is a value of column c (0 id, 1 split, 2 score), nil one time in 8.
func (g *gen) val(c int) any {
	x := g.byte()
	if x%8 == 0 {
		return nil
	}
	v := int64(x%16) - 4
	switch c {
	case 1:
		return string(rune('a' + v + 4))
	case 2:
		if x%16 == 15 {
			return math.NaN()
		}
		return float64(v) / 2
	}
	return v
}

func (g *gen) lit(c int) (string, any) {
	v := g.val(c)
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return "'" + v + "'", v
	case float64:
		if math.IsNaN(v) {
			return "1.5", 1.5 // NaN has no literal
		}
		return strconv.FormatFloat(v, 'g', -1, 64), v
	}
	return fmt.Sprint(v), v
}

var genCols = []string{"id", "split", "score"}

// rexpr is a generated expression with its reference evaluation.
type rexpr struct {
	text string
	eval func(row []any) tri
}

func (g *gen) expr(depth int) rexpr {
	op := g.byte() % 9
	if depth == 0 && op >= 6 {
		op %= 6
	}
	c := int(g.byte() % 3)
	col := genCols[c]
	switch op {
	case 0, 1, 2:
		ops := []string{"=", "<>", "<", "<=", ">", ">="}
		o := ops[g.byte()%6]
		text, v := g.lit(c)
		return rexpr{col + " " + o + " " + text, func(r []any) tri { return refCmp(r[c], o, v) }}
	case 3:
		n := 1 + int(g.byte()%20)
		not := g.byte()%2 == 0
		var texts []string
		var vals []any
		for range n {
			t, v := g.lit(c)
			texts, vals = append(texts, t), append(vals, v)
		}
		kw := " IN ("
		if not {
			kw = " NOT IN ("
		}
		return rexpr{col + kw + strings.Join(texts, ", ") + ")", func(r []any) tri {
			res := tFalse
			for _, v := range vals {
				res = or3(res, refCmp(r[c], "=", v))
			}
			if not {
				return not3(res)
			}
			return res
		}}
	case 4:
		not := g.byte()%2 == 0
		kw := " IS NULL"
		if not {
			kw = " IS NOT NULL"
		}
		return rexpr{col + kw, func(r []any) tri { return boolTri((r[c] == nil) != not) }}
	case 5:
		lo, lv := g.lit(c)
		hi, hv := g.lit(c)
		return rexpr{col + " BETWEEN " + lo + " AND " + hi, func(r []any) tri {
			return and3(refCmp(r[c], ">=", lv), refCmp(r[c], "<=", hv))
		}}
	case 6:
		x := g.expr(depth - 1)
		return rexpr{"NOT (" + x.text + ")", func(r []any) tri { return not3(x.eval(r)) }}
	}
	a, b := g.expr(depth-1), g.expr(depth-1)
	kw, op3 := " AND ", and3
	if g.byte()%2 == 0 {
		kw, op3 = " OR ", or3
	}
	return rexpr{"(" + a.text + ")" + kw + "(" + b.text + ")", func(r []any) tri { return op3(a.eval(r), b.eval(r)) }}
}

// refCmp is SQL's comparison of a row value with a literal: NULL when
// either is NULL; NaN equal to NaN and above every number.
func refCmp(a any, op string, b any) tri {
	if a == nil || b == nil {
		return tNull
	}
	var c int
	switch a := a.(type) {
	case int64:
		bi := b.(int64)
		switch {
		case a < bi:
			c = -1
		case a > bi:
			c = 1
		}
	case string:
		c = strings.Compare(a, b.(string))
	case float64:
		bf := b.(float64)
		switch {
		case math.IsNaN(a):
			c = 1
		case a < bf:
			c = -1
		case a > bf:
			c = 1
		}
	}
	var ok bool
	switch op {
	case "=":
		ok = c == 0
	case "<>":
		ok = c != 0
	case "<":
		ok = c < 0
	case "<=":
		ok = c <= 0
	case ">":
		ok = c > 0
	case ">=":
		ok = c >= 0
	}
	return boolTri(ok)
}

// truthfulStats are the statistics a correct writer gives the rows.
func truthfulStats(rows [][]any) string {
	mins, maxs := map[string]string{}, map[string]string{}
	nulls := map[string]int{}
	for c, name := range genCols {
		var lo, hi any
		for _, r := range rows {
			v := r[c]
			if v == nil {
				nulls[name]++
				continue
			}
			if f, ok := v.(float64); ok && math.IsNaN(f) {
				continue // writers leave NaN out of the bounds
			}
			if lo == nil || refCmp(v, "<", lo) == tTrue {
				lo = v
			}
			if hi == nil || refCmp(v, ">", hi) == tTrue {
				hi = v
			}
		}
		if lo != nil {
			mins[name], maxs[name] = statJSON(lo), statJSON(hi)
		}
	}
	js := func(m map[string]string) string {
		var parts []string
		for k, v := range m {
			parts = append(parts, strconv.Quote(k)+":"+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	var np []string
	for _, name := range genCols {
		np = append(np, fmt.Sprintf("%q:%d", name, nulls[name]))
	}
	return fmt.Sprintf(`{"numRecords":%d,"minValues":%s,"maxValues":%s,"nullCount":{%s}}`, len(rows), js(mins), js(maxs), strings.Join(np, ","))
}

func statJSON(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// TestBrief: what logs and _commit.json print of an expression is
// bounded, cut at a character, and whole when short.
func TestBrief(t *testing.T) {
	if got := Brief(" id = 1 "); got != "id = 1" {
		t.Errorf("short: %q", got)
	}
	long := "split IN (" + strings.Repeat("'ünï', ", 200000) + "'x')"
	got := Brief(long)
	if len(got) > 240 || !strings.HasSuffix(got, fmt.Sprintf("... (%d bytes)", len(long))) || !utf8.ValidString(got) {
		t.Errorf("long: %d bytes %q", len(got), got)
	}
}

// TestWorstCaseExpression: the largest expressions the limits allow
// parse and bind in bounded time and memory.
func TestWorstCaseExpression(t *testing.T) {
	nines := strings.Repeat("9", MaxDigits-1)
	for name, expr := range map[string]string{
		"or chain":     strings.Repeat("id = 1 OR ", (MaxText-16)/10) + "id = 1",
		"in list":      "price IN (" + strings.Repeat("0."+nines+"e-390,", MaxList-1) + "1)",
		"string list":  "split IN (" + strings.Repeat("'abcdef',", MaxList-1) + "'x')",
		"between list": strings.Repeat("score BETWEEN -1e308 AND 1e308 AND ", (MaxText-64)/36) + "TRUE",
	} {
		if len(expr) > MaxText {
			expr = expr[:MaxText]
			expr = expr[:strings.LastIndex(expr, ",")] + ")"
		}
		var before, after runtimeMem
		before.read()
		start := time.Now()
		_, err := bind(t, expr)
		d := time.Since(start)
		after.read()
		if err != nil && !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %d bytes, %v, %d MiB allocated", name, len(expr), d, (after.total-before.total)>>20)
		if d > 5*time.Second {
			t.Errorf("%s (%d bytes): %v to bind", name, len(expr), d)
		}
		if grew := after.total - before.total; grew > 512<<20 {
			t.Errorf("%s (%d bytes): %d MiB allocated", name, len(expr), grew>>20)
		}
	}
}

type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
