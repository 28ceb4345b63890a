package sample_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/memtable"
)

// TestShardClassWarning: shards of a class-clustered version hold different
// class folders, and building them logs one warning naming the classes; a
// version whose rows mix the classes logs none.
func TestShardClassWarning(t *testing.T) {
	spec := sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: 3}
	build := func(label func(i int) any) string {
		var logs bytes.Buffer
		tbl := memtable.New("id:long", "label:integer", "pixels:binary")
		tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a.parquet", Rows: rowsOf(30, 0, label, img)}}, nil, nil)
		opts := tbl.Options(spec)
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s, err := sample.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		shards(t, s, 0)
		shards(t, s, 0) // built once: no second warning
		return logs.String()
	}
	const msg = "shards hold different classes"
	if log := build(func(i int) any { return int32(i % 3) }); strings.Contains(log, msg) {
		t.Errorf("mixed classes: warned\n%s", log)
	}
	log := build(func(i int) any { return int32(i / 10) }) // shard k holds class k only
	if strings.Count(log, msg) != 1 || !strings.Contains(log, "only_in_shard=[1]") || !strings.Contains(log, "missing_from_shard=[0]") {
		t.Errorf("clustered classes: want one warning naming classes 1 and 0, got\n%s", log)
	}
}
