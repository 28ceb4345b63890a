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
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "bench/out", "work directory (tables, mounts, copies)")
	results := flag.String("results", "bench/RESULTS.md", "results file (a chart is written beside it)")
	runs := flag.Int("runs", 3, "repetitions of every measurement (at least 3: a median needs them)")
	only := flag.String("only", "", "run only workloads whose name contains this")
	quick := flag.Bool("quick", false, "small workloads (10,000 MNIST test digits, 300 large samples, 50,000 tiny ones) to check the harness end to end; the figures are not comparable with a full run")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *runs < 3 {
		fmt.Fprintf(os.Stderr, "run: -runs %d: want at least 3 (medians and spreads need them)\n", *runs)
		os.Exit(2)
	}

	b, err := newBench(*out, *runs, *quick)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	failed := 0
	for _, w := range workloads {
		if *only != "" && !contains(w.name, *only) {
			continue
		}
		log.Printf("workload %s", w.name)
		if err := w.run(b); err != nil {
			// Keep the other workloads' figures: record the failure and go on.
			failed++
			log.Printf("workload %s FAILED: %v", w.name, err)
			b.note("workload %s failed: %s", w.name, oneLine(err.Error()))
		}
	}
	b.close()
	if err := b.write(*results, filepath.Join(filepath.Dir(*results), "throughput.svg"), time.Since(start)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s\n", *results)
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "run: %d workload(s) failed (see the notes in %s)\n", failed, *results)
		os.Exit(1)
	}
	os.Exit(0)
}

// oneLine squeezes a multi-line error into one line for the results.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
