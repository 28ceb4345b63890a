package table

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// TestWhereSamplesMatchRows: on every shared table that reads, the JSON
// samples a filtered mount serves (the sample index: pruning, skipping,
// batch evaluation) are exactly the rows `deltafs cat --where` prints
// (the row path: scan.File and MatchRow), for null tests and comparisons
// with a value of the table on its integer, string and date columns.
func TestWhereSamplesMatchRows(t *testing.T) {
	checked := 0
	for _, name := range testkit.DirNames(t, testkit.Tables()) {
		dir := filepath.Join(testkit.Tables(), name)
		tb, err := Open(context.Background(), Options{Location: dir, Spec: &sample.Spec{DataColumn: sample.NoData}})
		if err != nil {
			continue // not a table, or one deltafs refuses (tested elsewhere)
		}
		snap := tb.Latest
		var preds []string
		for _, f := range snap.Schema.Fields {
			p, ok := f.Type.(*snapshot.PrimitiveType)
			if !ok || p.Name == "variant" {
				continue
			}
			c := "`" + f.Name + "`"
			preds = append(preds, c+" IS NULL", "NOT "+c+" IS NULL")
			if lit := someLiteral(t, snap, f.Name, p.Name); lit != "" {
				preds = append(preds, c+" = "+lit, c+" < "+lit, "("+c+" >= "+lit+" OR "+c+" IS NULL)")
			}
		}
		for _, w := range preds {
			want := catWhere(t, snap, w)
			got := mountWhere(t, dir, w)
			if strings.Join(got, "") != strings.Join(want, "") {
				t.Errorf("%s --where %q: the mount serves %d rows, cat prints %d", name, w, len(got), len(want))
			}
			checked++
		}
		tb.Close()
	}
	t.Logf("%d predicates checked", checked)
	if checked < 200 {
		t.Errorf("only %d predicates checked", checked)
	}
}

// someLiteral is a SQL literal of a value of column c (integers, strings,
// dates), or "".
func someLiteral(t *testing.T, snap *snapshot.Snapshot, c, typ string) string {
	sc, err := scan.New(snap, []string{c})
	if err != nil {
		return ""
	}
	var vals []string
	_ = sc.All(context.Background(), func(_ *snapshot.AddFile, _ int64, row []any) error {
		switch v := row[0].(type) {
		case int64, int32, int16, int8:
			vals = append(vals, fmt.Sprint(v))
		case string:
			vals = append(vals, "'"+strings.ReplaceAll(v, "'", "''")+"'")
		case time.Time:
			if typ == "date" {
				vals = append(vals, "DATE '"+v.Format("2006-01-02")+"'")
			}
		}
		return nil
	})
	if len(vals) == 0 {
		return ""
	}
	slices.Sort(vals)
	return vals[len(vals)/2]
}

// catWhere is what `deltafs cat --where` prints, sorted.
func catWhere(t *testing.T, snap *snapshot.Snapshot, where string) []string {
	t.Helper()
	e, err := filter.Parse(where)
	if err != nil {
		t.Fatal(err)
	}
	f, err := filter.Bind(e, snap)
	if err != nil {
		t.Fatalf("%q: %v", where, err)
	}
	sc, err := scan.New(snap, snap.Schema.Names())
	if err != nil {
		t.Fatal(err)
	}
	at := make([]int, len(f.Columns()))
	for k, c := range f.Columns() {
		at[k] = slices.Index(snap.Schema.Names(), c.Name)
	}
	var out []string
	err = sc.All(context.Background(), func(_ *snapshot.AddFile, _ int64, row []any) error {
		if f.MatchRow(row, at) {
			out = append(out, string(sc.AppendJSON(nil, row))+"\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// mountWhere is the content of every sample a mount with --where serves
// (two shards, rows as JSON), sorted.
func mountWhere(t *testing.T, dir, where string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tb, err := Open(ctx, Options{Location: dir, Spec: &sample.Spec{DataColumn: sample.NoData, Where: whereExpr(where), Shards: 2}})
	if err != nil {
		t.Fatalf("%q: %v", where, err)
	}
	defer tb.Close()
	ver, err := tb.Samples.Version(ctx, tb.Latest.Version)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range ver.Shards() {
		sh, err := ver.Shard(ctx, k)
		if err != nil {
			t.Fatalf("%q: %v", where, err)
		}
		for pos := range sh.Len() {
			b, err := sh.Content(ctx, pos)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}
