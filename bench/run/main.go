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
// in-process parquet-go decoding of the same column. The scale workloads
// (ten million samples in one shard; a million in 10,000 data files) time a
// mount from its start to the end of an epoch and measure the memory it
// takes in the server and the kernel, under a watchdog that stops a run
// before it takes the machine down (scale.go, guard.go).
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
	only := flag.String("only", "", "run only these workloads (comma-separated): each a workload's name, or if none has it, a part of the names")
	quick := flag.Bool("quick", false, "small workloads (10,000 MNIST test digits, 300 large samples, 50,000 tiny ones, 200,000 and 100,000 for ten-million and million-files) to check the harness end to end; the figures are not comparable with a full run")
	maxRSS := flag.Float64("max-server-rss", float64(defaultLimits.maxRSS)/(1<<30), "scale workloads: stop the run when the deltafs server's resident memory passes this many GiB")
	maxSlab := flag.Float64("max-slab-growth", float64(defaultLimits.maxSlab)/(1<<30), "scale workloads: stop the run when the kernel's Slab grows by this many GiB over the mount")
	minAvail := flag.Float64("min-mem-available", float64(defaultLimits.minAvail)/(1<<30), "scale workloads: stop the run when MemAvailable falls under this many GiB")
	stepTimeout := flag.Duration("step-timeout", defaultLimits.step, "scale workloads: stop the run when one step (first sample, a listing, find) takes longer; an epoch gets the longer of this and one slower than -epoch-floor")
	epochFloor := flag.Float64("epoch-floor", defaultLimits.epochFloor, "scale workloads: files/s under which an epoch is stopped")
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
	b.limits = guardLimits{maxRSS: int64(*maxRSS * (1 << 30)), maxSlab: int64(*maxSlab * (1 << 30)), minAvail: int64(*minAvail * (1 << 30)), step: *stepTimeout, epochFloor: *epochFloor}

	start := time.Now()
	failed := 0
	for _, w := range workloads {
		if *only != "" && !selected(w.name, *only) {
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
	if err := os.MkdirAll(filepath.Dir(*results), 0o755); err != nil {
		log.Fatal(err)
	}
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

// selected says whether the workload name is in the -only list: named
// exactly, or containing an item that names no workload exactly (so
// "million" is only the million workload, "s3" every S3 one).
func selected(name, only string) bool {
	for _, item := range strings.Split(only, ",") {
		exact := false
		for _, w := range workloads {
			exact = exact || w.name == item
		}
		if item == name || !exact && item != "" && contains(name, item) {
			return true
		}
	}
	return false
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
