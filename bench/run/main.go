// Command run is `make bench`: it builds the workloads, runs every reader
// against deltafs and against its baseline in the same run, repeats each
// measurement, and writes bench/RESULTS.md with medians, spread and a chart.
//
// Workloads: the 60,000 real MNIST training digits (784-byte raw pixels, and
// as PNGs for ImageFolder), and 5,000 generated 100 KB samples (JPEG-sized,
// incompressible). Readers: a plain open/read/close loop with 1 and 8
// threads (bench/readloop), and torchvision's ImageFolder with a two-worker
// DataLoader. Baselines: the same files on tmpfs or local disk, a minimal
// go-fuse server serving the same bytes from memory (bench/floor), and
// in-process parquet-go decoding of the same column.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"
)

func main() {
	out := flag.String("out", "bench/out", "work directory (tables, mounts, copies)")
	results := flag.String("results", "bench/RESULTS.md", "results file (a chart is written beside it)")
	runs := flag.Int("runs", 3, "repetitions of every measurement")
	only := flag.String("only", "", "run only workloads whose name contains this")
	flag.Parse()
	log.SetFlags(log.Ltime)

	b, err := newBench(*out, *runs)
	if err != nil {
		log.Fatal(err)
	}
	defer b.close()
	start := time.Now()
	for _, w := range workloads {
		if *only != "" && !contains(w.name, *only) {
			continue
		}
		log.Printf("workload %s", w.name)
		if err := w.run(b); err != nil {
			log.Fatalf("workload %s: %v", w.name, err)
		}
	}
	if err := b.write(*results, filepath.Join(filepath.Dir(*results), "throughput.svg"), time.Since(start)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s\n", *results)
	os.Exit(0)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
