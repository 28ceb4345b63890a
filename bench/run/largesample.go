package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// One sample far larger than the memory cache, read front to back in
// 1 MiB reads, as `cat` or a loader reads a large file: on a fresh mount
// (--mem-cache 64 MiB, no disk cache; the shard's index, which decodes the
// page once as a stream into a spill file, built before the clock by
// listing it) against the same bytes read the same way from a local file,
// both in the page cache. Every read costs its own bytes, read from the
// spill file (page/stream.go). The server's peak memory is reported
// over --mem-cache.

func init() { workloads = append(workloads, workload{"large-sample", largeSampleWorkload}) }

const largeSampleMemCache = 64 << 20

func largeSampleFigures() []figure {
	const p = "large-sample/"
	return []figure{
		{"256 MiB sample in 1 MiB reads: deltafs / local file (seconds)", p + "deltafs read", p + "local file read", "report", nil},
		{"256 MiB sample in 1 MiB reads: deltafs (s)", p + "deltafs read", "", "report", nil},
		{"256 MiB sample in 1 MiB reads: deltafs, the first read (s; the index build streamed the page before it)", p + "deltafs first read", "", "report", nil},
		{"256 MiB sample in 1 MiB reads: server peak RSS over --mem-cache / sample size", p + "peak RSS over --mem-cache", p + "sample size", "report (bounded: the page streamed)", nil},
		{"256 MiB sample in 1 MiB reads: pages decoded (index build and reads)", p + "pages decoded", "", "≤ 2", atMost(2)},
	}
}

func largeSampleWorkload(b *bench) error {
	const w = "large-sample"
	size := 256 << 20
	if b.quick {
		size = 32 << 20
	}
	value := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{9}).Read(value)
	table := filepath.Join(b.out, "tables", w+"-"+strconv.Itoa(size>>20))
	if _, err := os.Stat(filepath.Join(table, "_delta_log")); err != nil {
		if err := testkit.WriteBlobTable(table, testkit.BlobSchema, []testkit.BlobRow{{ID: 0, Data: value}}); err != nil {
			return err
		}
	}
	local := filepath.Join(b.out, "disk", w+".bin")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(local, value, 0o644); err != nil {
		return err
	}
	for r := 0; r < b.runs; r++ {
		m, err := b.mount(table, "--mem-cache", strconv.Itoa(largeSampleMemCache), "--cache-dir", "none", "--read-ahead", "0")
		if err != nil {
			return err
		}
		shard := filepath.Join(m.dir, "latest", "shard", "0")
		names, err := os.ReadDir(shard)    // the index build
		if err == nil && len(names) != 2 { // the sample and _samples.tsv
			err = fmt.Errorf("shard 0 holds %d files, want the sample and _samples.tsv", len(names))
		}
		if err != nil {
			m.unmount()
			return err
		}
		secs, first, err := readMiB(filepath.Join(shard, names[0].Name()), value)
		var peak float64
		var s map[string]any
		if err == nil {
			peak, err = m.peakMB()
			s, _ = m.stats()
		}
		m.unmount()
		if err != nil {
			return err
		}
		b.add(w+"/deltafs read", "s", secs)
		b.add(w+"/deltafs first read", "s", first)
		b.add(w+"/peak RSS over --mem-cache", "MB", peak-largeSampleMemCache/(1<<20))
		b.add(w+"/sample size", "MB", float64(size)/(1<<20))
		b.add(w+"/pages decoded", "pages", number(s, "storage.pages_decoded"))
		if secs, _, err = readMiB(local, value); err != nil {
			return err
		}
		b.add(w+"/local file read", "s", secs)
	}
	return nil
}

// readMiB reads the file at path front to back in 1 MiB reads, checking
// each against want, and returns the seconds from open to close, and
// those until the first read returned.
func readMiB(path string, want []byte) (secs, first float64, err error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	off := 0
	for {
		n, err := f.Read(buf)
		if off == 0 {
			first = time.Since(start).Seconds()
		}
		if n > 0 && (off+n > len(want) || !bytes.Equal(buf[:n], want[off:off+n])) {
			return 0, 0, fmt.Errorf("%s: the bytes at %d differ", path, off)
		}
		off += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if off != len(want) {
		return 0, 0, fmt.Errorf("%s: %d bytes, want %d", path, off, len(want))
	}
	return time.Since(start).Seconds(), first, f.Close()
}
