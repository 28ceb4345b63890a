package sample_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// whereTable is a table of two files, a (ids 0..2) and b (ids 100..102),
// whose statistics let a filter on id skip one of them.
func whereTable(t *testing.T) *sampletest.Table {
	t.Helper()
	tbl := sampletest.New("id:long", "data:binary")
	rows := func(from int64) [][]any {
		return [][]any{{from, []byte{1}}, {from + 1, []byte{2}}, {from + 2, []byte{3}}}
	}
	v := tbl.Commit(time.Unix(1e9, 0), "WRITE", []sampletest.Add{{Path: "a", Rows: rows(0)}, {Path: "b", Rows: rows(100)}}, nil, nil)
	snap, err := tbl.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files {
		lo := map[string]string{"a": "0", "b": "100"}[f.Path]
		hi := map[string]string{"a": "2", "b": "102"}[f.Path]
		f.Stats = `{"numRecords":3,"minValues":{"id":` + lo + `},"maxValues":{"id":` + hi + `},"nullCount":{"id":0}}`
	}
	return tbl
}

// TestWhereOneBindingOneCount: a version's filter is bound and its files
// decided once, and the mount's start line (Describe), .deltafs/stats
// (FilterCounts) and _commit.json say the same counts; the shards hold
// the matching rows only.
func TestWhereOneBindingOneCount(t *testing.T) {
	ctx := context.Background()
	e, err := filter.Parse("  id >= 100 ")
	if err != nil {
		t.Fatal(err)
	}
	s := newSamples(t, whereTable(t), sample.Spec{Where: e})
	ver, err := s.Version(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := ver.Describe()
	if err != nil {
		t.Fatal(err)
	}
	if want := `where="id >= 100" files_pruned=0 files_skipped=1 files_read=1`; !strings.Contains(desc, want) {
		t.Errorf("Describe = %q, want it to hold %q", desc, want)
	}
	c, ok := ver.FilterCounts()
	if !ok || c != (sample.FilterCounts{Skipped: 1, Read: 1}) {
		t.Errorf("FilterCounts = %+v, %v; want 1 skipped, 1 read", c, ok)
	}
	js := string(ver.CommitJSON())
	for _, want := range []string{`"where": "id \u003e= 100"`, `"filesSkipped": 1`, `"filesRead": 1`, `"filesPruned": 0`} {
		if !strings.Contains(js, want) {
			t.Errorf("_commit.json misses %s:\n%s", want, js)
		}
	}
	n := 0
	for _, sh := range shards(t, s, 0) {
		n += sh.Len()
	}
	if n != 3 {
		t.Errorf("%d samples, want the 3 rows of b", n)
	}
}

// TestWhereThatDoesNotBind: a filter naming no column of the version fails
// the version alike everywhere: Describe gives the cause alone (its
// caller names table and version), Servable a SpecError naming them,
// _commit.json the error, and FilterCounts says there is no filter.
func TestWhereThatDoesNotBind(t *testing.T) {
	ctx := context.Background()
	e, err := filter.Parse("nosuch = 1")
	if err != nil {
		t.Fatal(err)
	}
	s := newSamples(t, whereTable(t), sample.Spec{Where: e})
	ver, err := s.Version(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, derr := ver.Describe()
	if derr == nil || strings.Contains(derr.Error(), "version 0") || !strings.Contains(derr.Error(), "nosuch") {
		t.Errorf("Describe error = %v, want the cause naming the column, without the version", derr)
	}
	serr := ver.Servable()
	var se *sample.SpecError
	if !errors.As(serr, &se) || serr.Error() != "mem://table version 0: "+derr.Error() {
		t.Errorf("Servable = %v, want a SpecError %q", serr, "mem://table version 0: "+derr.Error())
	}
	if _, ok := ver.FilterCounts(); ok {
		t.Error("FilterCounts says a filter that does not bind is one")
	}
	if js := string(ver.CommitJSON()); !strings.Contains(js, `"error": "--where: `) {
		t.Errorf("_commit.json does not say the filter's error:\n%s", js)
	}
}

// TestCheckImage: --image is checked against the first value the version
// would serve: a wrong size fails naming the table, version and data
// file; a file the filter skips is not asked (its values may be of any
// size); files that cannot be read leave the check to the reads.
func TestCheckImage(t *testing.T) {
	ctx := context.Background()
	img := sample.Image{H: 1, W: 3, C: 1}
	tbl := whereTable(t) // values of 1 byte
	tbl.Commit(time.Unix(1e9+1, 0), "WRITE", []sampletest.Add{{Path: "c", Rows: [][]any{{int64(200), nil}, {int64(201), []byte{1, 2, 3}}}}}, []string{"a"}, nil)
	version := func(spec sample.Spec, v int64) *sample.Version {
		ver, err := newSamples(t, tbl, spec).Version(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		return ver
	}
	err := version(sample.Spec{Image: img}, 0).CheckImage(ctx)
	var fe *sample.FileError
	if !errors.As(err, &fe) || fe.Path != "a" || fe.Version != 0 ||
		err.Error() != "mem://table version 0: data file a: --image 1x3 needs 3-byte values (1x3x1), but column data holds 1 bytes" {
		t.Errorf("wrong shape: %v", err)
	}
	// Version 1 holds b (1-byte values) and c (a null, then 3 bytes):
	// a filter that skips b leaves c, whose first non-null value fits.
	e, _ := filter.Parse("id >= 200")
	if err := version(sample.Spec{Image: img, Where: e}, 1).CheckImage(ctx); err != nil {
		t.Errorf("the filter's files fit: %v", err)
	}
	if err := version(sample.Spec{Image: img}, 1).CheckImage(ctx); err == nil || !strings.Contains(err.Error(), "data file b:") {
		t.Errorf("without the filter b is checked: %v", err)
	}
	img3 := sample.Image{H: 1, W: 1, C: 3}
	if err := version(sample.Spec{Image: img3}, 1).CheckImage(ctx); err == nil || !strings.Contains(err.Error(), "--image 1x1x3 needs 3-byte values (1x1x3)") {
		t.Errorf("a shape with channels: %v", err)
	}
	// Nothing to check: no image, or no file that can be read.
	if err := version(sample.Spec{}, 0).CheckImage(ctx); err != nil {
		t.Errorf("without --image: %v", err)
	}
	tbl.Vacuum("b")
	tbl.Vacuum("c")
	if err := version(sample.Spec{Image: img}, 1).CheckImage(ctx); err != nil {
		t.Errorf("unreadable files: %v", err)
	}
}
