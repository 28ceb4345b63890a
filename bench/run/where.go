package main

import (
	"os"
	"path/filepath"

	"github.com/deltafs/deltafs/internal/testkit"
)

// The cost of a filter: data-file bytes a mount with --where on one
// partition of a 10-partition table reads, listing and reading every
// sample of its one shard cold (no disk cache), over what a mount of a
// table holding that partition alone (the same data files, byte for
// byte) reads. Partition pruning opens no file of another partition, so
// the ratio is 1 up to the index's reads.

func init() { workloads = append(workloads, workload{"where", whereWorkload}) }

func whereFigures() []figure {
	return []figure{{"data bytes read for a 10% partition with --where / the partition mounted alone", "where/filtered", "where/alone", "≤ 1.05", atMost(1.05)}}
}

func whereWorkload(b *bench) error {
	o := testkit.Partitioned{Partitions: 10, FilesPer: 4, RowsPer: 2500, SampleBytes: 784, Only: -1}
	if b.quick {
		o.FilesPer, o.RowsPer = 2, 500
	}
	whole, alone := filepath.Join(b.out, "tables", "where-whole"), filepath.Join(b.out, "tables", "where-alone")
	for _, d := range []string{whole, alone} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	if err := testkit.WritePartitioned(whole, o); err != nil {
		return err
	}
	o.Only = 3
	if err := testkit.WritePartitioned(alone, o); err != nil {
		return err
	}
	for r := 0; r < b.runs; r++ {
		for _, c := range []struct {
			key, table string
			flags      []string
		}{
			{"where/filtered", whole, []string{"--where", "split = 'p3'"}},
			{"where/alone", alone, nil},
		} {
			s, err := b.shardZeroStats(c.table, c.flags...)
			if err != nil {
				return err
			}
			b.add(c.key, "bytes", number(s, statDataBytes))
		}
	}
	return nil
}
