package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// A sample larger than the memory cache costs, read in 1 MiB reads,
// time linear in its size and memory independent of the reads: its page
// is decoded a bounded number of times (once to index it, once for the
// first read, which spills it to a file the next reads are served from),
// not once per read, and the disk cache's entry is not read whole for
// every read either. bench's large-sample workload measures the time
// (bench/RESULTS.md).
func TestLargeSampleReads(t *testing.T) {
	const size = 64 << 20
	value := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(value)
	dir := filepath.Join(t.TempDir(), "large")
	if err := testkit.WriteBlobTable(dir, testkit.BlobSchema, []testkit.BlobRow{{ID: 7, Data: value}}); err != nil {
		t.Fatal(err)
	}
	bin := mounttest.Binary(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"no disk cache", []string{"--cache-dir", "none"}},
		{"disk cache", []string{"--cache-dir", t.TempDir()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mounttest.Start(t, bin, dir, append([]string{"--mem-cache", "8MiB", "--read-ahead", "0"}, tc.flags...)...)
			t0 := time.Now()
			f, err := os.Open(filepath.Join(m.Dir, "latest", "shard", "0", "7.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			opened := time.Since(t0) // indexing decodes the page
			start := time.Now()
			buf := make([]byte, 1<<20)
			for off := 0; off < size; off += len(buf) {
				n, err := f.ReadAt(buf, int64(off))
				if n != len(buf) || err != nil || !bytes.Equal(buf, value[off:off+n]) {
					t.Fatalf("read at %d: %d bytes, %v, equal %v", off, n, err, bytes.Equal(buf[:n], value[off:off+n]))
				}
				// Fail as soon as the reads cost their sample, not after
				// minutes of it.
				if decoded, diskHits, _ := mountCounts(t, m.Dir); decoded > 3 || diskHits > 3 {
					t.Fatalf("after %d MiB read: %d pages decoded, %d disk-cache hits: the sample is fetched again for every read", off>>20+1, decoded, diskHits)
				}
			}
			if n, err := f.ReadAt(buf, size); n != 0 {
				t.Fatalf("read at the end: %d bytes, %v", n, err)
			}
			t.Logf("open %v, 64 reads of 1 MiB %v, peak memory %d MiB", opened, time.Since(start), peakRSS(t, m.Pid())>>20)
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("64 reads of 1 MiB took %v", d)
			}
			// The page is decoded as a stream into a spill file, never
			// whole in memory (which takes several times the sample).
			if _, _, streamed := mountCounts(t, m.Dir); streamed != 1 {
				t.Fatalf("%d pages decoded as a stream, want the sample's page once", streamed)
			}
			if hwm := peakRSS(t, m.Pid()); hwm > size+32<<20 {
				t.Fatalf("peak memory of the mount %d MiB for a sample of %d MiB", hwm>>20, size>>20)
			}
		})
	}
}

// mountCounts are the mount's pages decoded, disk-cache hits and pages
// decoded as a stream so far (.deltafs/stats).
func mountCounts(t *testing.T, mnt string) (decoded, diskHits, streamed int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Storage struct {
			PagesDecoded  int64 `json:"pages_decoded"`
			PagesStreamed int64 `json:"pages_streamed"`
		} `json:"storage"`
		Cache struct{ DiskHits int64 } `json:"cache"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("stats: %v\n%s", err, b)
	}
	return st.Storage.PagesDecoded, st.Cache.DiskHits, st.Storage.PagesStreamed
}

// peakRSS is the peak resident memory of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
