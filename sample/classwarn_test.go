package sample_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// TestShardClassWarning: with the contiguous layout, shards of a
// class-clustered version hold different class folders, and building them
// logs one warning; a version whose rows
// mix the classes logs none. With numeric classes a single shard suffices
// (it lacks the version's smallest or largest class, as on a node that
// lists only its own shard); with string classes two shards are compared.
func TestShardClassWarning(t *testing.T) {
	const (
		differ = "shards hold different classes"
		lacks  = "shard lacks classes the version has"
	)
	build := func(typ string, label func(i int) any, only ...int) string {
		var logs bytes.Buffer
		tbl := sampletest.New("id:long", "label:"+typ, "pixels:binary")
		tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: rowsOf(30, 0, label, img)}}, nil, nil)
		opts := tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: 3, Layout: sample.LayoutContiguous})
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s, err := sample.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(only) == 0 {
			shards(t, s, 0)
			shards(t, s, 0) // built once: no second warning
			return logs.String()
		}
		v, err := s.Version(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range only {
			if _, err := v.Shard(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		}
		return logs.String()
	}
	warnings := func(log string) int { return strings.Count(log, differ) + strings.Count(log, lacks) }

	if log := build("integer", func(i int) any { return int32(i % 3) }); warnings(log) != 0 {
		t.Errorf("mixed numeric classes: warned\n%s", log)
	}
	if log := build("string", func(i int) any { return fmt.Sprint("c", i%3) }); warnings(log) != 0 {
		t.Errorf("mixed string classes: warned\n%s", log)
	}
	// Shard k holds class k only.
	clustered := func(i int) any { return int32(i / 10) }
	if log := build("integer", clustered); warnings(log) != 1 || !strings.Contains(log, lacks) ||
		!strings.Contains(log, "shard=0") || !strings.Contains(log, "shard_class_range=0..0 version_class_range=0..2") {
		t.Errorf("clustered numeric classes: want one warning on shard 0, got\n%s", log)
	}
	if log := build("integer", clustered, 2); warnings(log) != 1 || !strings.Contains(log, "shard_class_range=2..2 version_class_range=0..2") {
		t.Errorf("clustered numeric classes, only shard 2 listed: want one warning, got\n%s", log)
	}
	if log := build("string", func(i int) any { return fmt.Sprint("c", i/10) }); warnings(log) != 1 || !strings.Contains(log, differ) ||
		!strings.Contains(log, "only_in_shard=[c1]") || !strings.Contains(log, "missing_from_shard=[c0]") {
		t.Errorf("clustered string classes: want one warning naming c1 and c0, got\n%s", log)
	}
}
