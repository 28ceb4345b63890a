package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The cost of the shard layouts: data-file bytes one shard of layoutShards
// reads (listing and reading every sample, cold, no disk cache) over the
// table's data-file bytes. A contiguous shard reads about 1/S of the data;
// a balanced one deals rows from every file, so for samples smaller than a
// page it reads nearly every page (and its index reads every file).

const layoutShards = 4

func init() { workloads = append(workloads, workload{"layout", layoutWorkload}) }

func layoutFigures() []figure {
	var fs []figure
	for _, w := range []string{"mnist-784B", "jpeg-100KB"} {
		for _, l := range []string{"balanced", "contiguous"} {
			fs = append(fs, figure{fmt.Sprintf("data bytes one shard of %d reads / data file bytes, %s layout (%s)", layoutShards, l, w),
				"layout/" + w + "/" + l, "", "report", nil})
		}
	}
	return fs
}

// dataFileBytes sums the sizes of a table's data files (outside _delta_log).
func dataFileBytes(table string) (int64, error) {
	var n int64
	err := filepath.Walk(table, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func layoutWorkload(b *bench) error {
	tables := map[string][]string{}
	src, rows := "testdata/mnist/mnist-train.npy.gz", "10000"
	if b.quick {
		src, rows = "testdata/mnist/mnist-test.npy.gz", "2000"
	}
	mnist, err := b.table("mnist-layout", src, "--rows-per-file", rows)
	if err != nil {
		return err
	}
	tables["mnist-784B"] = []string{mnist, "--image", "28x28", "--class-column", "label"}
	large := filepath.Join(b.out, "tables", "jpeg-100KB")
	if _, err := os.Stat(large); err == nil {
		tables["jpeg-100KB"] = []string{large}
	}
	for r := 0; r < b.runs; r++ {
		for w, spec := range tables {
			total, err := dataFileBytes(spec[0])
			if err != nil {
				return err
			}
			for _, l := range []string{"balanced", "contiguous"} {
				s, err := b.shardZeroStats(spec[0], append(append([]string{}, spec[1:]...), "--shards", fmt.Sprint(layoutShards), "--shard-layout", l)...)
				if err != nil {
					return err
				}
				b.add("layout/"+w+"/"+l, "ratio", number(s, statDataBytes)/float64(total))
			}
		}
	}
	return nil
}
