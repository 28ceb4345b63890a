// Command readloop is the plain reader of deltafs's benchmarks: it reads
// every regular file under the given roots with open, read to EOF, close —
// what a data loader does per sample — from T threads, and prints one JSON
// line: files, bytes, seconds, files/s, MB/s. The file list is gathered
// before the clock starts (a `_samples.tsv` sample list is used when present,
// as a loader would), so the figure is read throughput only.
//
//	readloop -threads 8 ROOT [ROOT ...]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltafs/deltafs/bench/samplelist"
)

func main() {
	threads := flag.Int("threads", 1, "concurrent readers")
	list := flag.Bool("list", false, "find the files by listing their directories, even where a _samples.tsv sample list is")
	flag.Parse()
	var files []string
	for _, root := range flag.Args() {
		found, err := gather(root, *list)
		if err != nil {
			log.Fatal(err)
		}
		files = append(files, found...)
	}
	var next, nbytes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *threads)
	start := time.Now()
	for w := 0; w < *threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(files)) {
					return
				}
				n, err := readFile(files[i], buf)
				if err != nil {
					errs <- err
					return
				}
				nbytes.Add(n)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(map[string]any{
		"files": len(files), "bytes": nbytes.Load(), "seconds": secs,
		"files_per_s": float64(len(files)) / secs, "mb_per_s": float64(nbytes.Load()) / secs / 1e6,
	})
	fmt.Println(string(out))
}

func readFile(path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// gather lists the sample files under root: from its _samples.tsv when it
// has one (first column: relative path), else by walking the tree.
func gather(root string, list bool) ([]string, error) {
	if f, err := os.Open(filepath.Join(root, "_samples.tsv")); err == nil && !list {
		defer f.Close()
		rels, err := samplelist.Parse(f)
		for i, rel := range rels {
			rels[i] = filepath.Join(root, rel)
		}
		return rels, err
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), "_") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
