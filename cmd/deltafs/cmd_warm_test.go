package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// statsJSON is the part of MOUNT/.deltafs/stats these tests check.
type statsJSON struct {
	Storage struct {
		BytesRead         int64 `json:"bytes_read"`
		DataFileBytesRead int64 `json:"data_file_bytes_read"`
		DataFileReads     int64 `json:"data_file_reads"`
		FilesOpened       int64 `json:"files_opened"`
		PagesDecoded      int64 `json:"pages_decoded"`
	} `json:"storage"`
	Index struct {
		Files          int64 `json:"files"`
		FilesFromCache int64 `json:"files_from_cache"`
		Samples        int64 `json:"samples"`
	} `json:"index"`
	Reads struct {
		Samples int64         `json:"samples"`
		Errors  int64         `json:"errors"`
		Latency cache.Latency `json:"latency"` // of FUSE sample reads
	} `json:"reads"`
	Prefill struct {
		Files  int64 `json:"files"` // sample reads served to the prefill, not to a FUSE READ
		Bytes  int64 `json:"bytes"`
		Missed int64 `json:"missed"` // not pushed: read but the kernel had forgotten the inode, or not read
	} `json:"prefill"`
	Cache cache.Stats `json:"cache"`
}

func readStats(t *testing.T, mnt string) statsJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s statsJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf(".deltafs/stats is not the expected JSON: %v\n%s", err, b)
	}
	// Every tier's counters and latency summaries are there.
	var raw struct {
		Cache map[string]json.RawMessage
		Reads map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Reads["latency"]; !ok {
		t.Error(".deltafs/stats: reads has no latency")
	}
	for _, k := range []string{"MemHits", "MemMisses", "DiskHits", "DiskMisses", "MemEvictions", "DiskEvictions", "MemLatency", "DiskLatency", "FetchLatency"} {
		if _, ok := raw.Cache[k]; !ok {
			t.Errorf(".deltafs/stats: cache has no %s", k)
		}
	}
	return s
}

// importDigits imports n MNIST test digits with `deltafs import`, files of
// per rows, and returns the table directory.

func itoa(i int) string { return strconv.Itoa(i) }

// readTree reads every sample file under dir (relative path -> bytes).
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "_") {
			return err
		}
		if filepath.Base(filepath.Dir(p)) == "shard" {
			return nil // shard/K.tar, the tar view: not a sample file
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files, want %d", what, len(got), len(want))
	}
	for p, b := range want {
		if !bytes.Equal(got[p], b) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, p, len(got[p]), len(b))
		}
	}
}

var imageFlags = []string{"--image", "28x28", "--shards", "2"}

// reference reads version 0 through a mount without any disk cache.
func reference(t *testing.T, bin, table string) map[string][]byte {
	t.Helper()
	m := mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", "none")...)
	tree := readTree(t, filepath.Join(m.Dir, "version", "0"))
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestWarmThenMount: `deltafs warm` of one shard fills the cache so that a
// mount with the same cache dir reads that shard without reading any data
// file (pages, footers, sample indexes all cached), while the other shard
// still reads storage; then warming the rest makes the whole version free.
func TestWarmThenMount(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 1000)
	want := reference(t, bin, table)
	cdir := t.TempDir()

	out, err := mounttest.Run(bin, append([]string{"warm", table, "--version", "0", "--shard", "1", "--cache-dir", cdir}, imageFlags...)...)
	if err != nil {
		t.Fatalf("deltafs warm: %v\n%s", err, out)
	}
	if !strings.Contains(out, "1500/1500 samples") || !strings.Contains(out, "100%") {
		t.Errorf("warm printed no finished progress bar:\n%s", out)
	}

	m := mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...)
	v0 := filepath.Join(m.Dir, "version", "0")
	got1 := readTree(t, filepath.Join(v0, "shard", "1"))
	s := readStats(t, m.Dir)
	if s.Storage.DataFileBytesRead != 0 || s.Storage.FilesOpened != 0 || s.Index.Files != 0 {
		t.Errorf("warm shard 1 read: %d bytes from data files, %d files opened, %d indexes built; want none",
			s.Storage.DataFileBytesRead, s.Storage.FilesOpened, s.Index.Files)
	}
	if s.Cache.DiskHits == 0 || s.Index.FilesFromCache == 0 {
		t.Errorf("no disk hits (%d) or cached indexes (%d)", s.Cache.DiskHits, s.Index.FilesFromCache)
	}
	got0 := readTree(t, filepath.Join(v0, "shard", "0"))
	if s := readStats(t, m.Dir); s.Storage.DataFileBytesRead == 0 {
		t.Error("reading the shard that was not warmed read no data file")
	}
	got := map[string][]byte{}
	for p, b := range got0 {
		got[filepath.Join("shard", "0", p)] = b
	}
	for p, b := range got1 {
		got[filepath.Join("shard", "1", p)] = b
	}
	sameTree(t, "warm mount", got, want)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	// Warm the whole version (shard 0 is partly cached by the mount now),
	// by time, and mount again: nothing is read from data files.
	out, err = mounttest.Run(bin, append([]string{"warm", table, "--at", "2999-01-01T00:00:00Z", "--cache-dir", cdir, "--quiet"}, imageFlags...)...)
	if err != nil {
		t.Fatalf("deltafs warm --at: %v\n%s", err, out)
	}
	m = mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...)
	sameTree(t, "second warm mount", readTree(t, filepath.Join(m.Dir, "version", "0")), want)
	if s := readStats(t, m.Dir); s.Storage.DataFileBytesRead != 0 || s.Reads.Errors != 0 {
		t.Errorf("fully warmed version: %d bytes read from data files, %d read errors", s.Storage.DataFileBytesRead, s.Reads.Errors)
	}
}

// TestWarmErrors: bad usage exits 2, a bad table 1, each with one line.
func TestWarmErrors(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:100], 100)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"warm", table}, 2, "exactly one of --version and --at"},
		{[]string{"warm", table, "--version", "0", "--at", "0"}, 2, "exactly one of --version and --at"},
		{[]string{"warm", table, "--version", "0", "--shard", "3", "--shards", "2"}, 2, "--shard 3"},
		{[]string{"warm", table, "--version", "0", "--cache-dir", "none"}, 2, "no disk cache"},
		{[]string{"warm", table, "--version", "7", "--cache-dir", t.TempDir()}, 1, "version 7"},
		{[]string{"warm", filepath.Join(t.TempDir(), "nope"), "--version", "0"}, 1, "no such table"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("%v: %v, want exit %d\n%s", c.args, err, c.code, out)
			continue
		}
		last := lastLine(string(out))
		if !strings.HasPrefix(last, "deltafs: ") || !strings.Contains(last, c.want) {
			t.Errorf("%v: last line %q, want one error line naming %q", c.args, last, c.want)
		}
	}
}

// TestMountRemountReadsNoDataFile: a second mount with the same cache dir
// serves every file of a version without reading any data file.
func TestMountRemountReadsNoDataFile(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 1000)
	want := reference(t, bin, table)
	cdir := t.TempDir()

	m := mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...)
	sameTree(t, "first mount", readTree(t, filepath.Join(m.Dir, "version", "0")), want)
	s := readStats(t, m.Dir)
	if s.Storage.DataFileBytesRead == 0 || s.Cache.DiskMisses == 0 || s.Cache.Fetches == 0 || s.Cache.DiskWrites == 0 {
		t.Errorf("cold mount: %d data-file bytes, %d disk misses, %d fetches, %d disk writes; want all > 0",
			s.Storage.DataFileBytesRead, s.Cache.DiskMisses, s.Cache.Fetches, s.Cache.DiskWrites)
	}
	if s.Reads.Samples == 0 || s.Cache.FetchLatency.Count == 0 {
		t.Errorf("cold mount: %d sample reads, %d timed fetches", s.Reads.Samples, s.Cache.FetchLatency.Count)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}

	m = mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...)
	sameTree(t, "remount", readTree(t, filepath.Join(m.Dir, "version", "0")), want)
	s = readStats(t, m.Dir)
	if s.Storage.DataFileBytesRead != 0 || s.Storage.DataFileReads != 0 {
		t.Errorf("remount with a warm cache read %d bytes in %d reads from data files, want 0", s.Storage.DataFileBytesRead, s.Storage.DataFileReads)
	}
	if s.Index.Files != 0 || s.Index.FilesFromCache != 3 {
		t.Errorf("remount built %d sample indexes and took %d from the cache; want 0 and 3", s.Index.Files, s.Index.FilesFromCache)
	}
	if s.Cache.DiskHits == 0 || s.Cache.Fetches != 0 || s.Cache.DiskLatency.Count == 0 {
		t.Errorf("remount: %d disk hits, %d fetches, %d timed disk hits", s.Cache.DiskHits, s.Cache.Fetches, s.Cache.DiskLatency.Count)
	}
}

// TestMountsShareCacheDir: two mounts of one table reading the same
// version at once through one cache dir both serve the right bytes, and
// neither finds a corrupt entry.
func TestMountsShareCacheDir(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 1000)
	want := reference(t, bin, table)
	cdir := t.TempDir()
	ms := []*mounttest.Mount{
		mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...),
		mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...),
	}
	trees := make([]map[string][]byte, 2)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			// Both walk the same files in the same order, racing to fill the
			// same entries.
			tree := map[string][]byte{}
			for range 2 {
				root := filepath.Join(m.Dir, "version", "0")
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "_") {
						return err
					}
					if filepath.Base(filepath.Dir(p)) == "shard" {
						return nil // shard/K.tar, the tar view: not a sample file
					}
					b, err := os.ReadFile(p)
					if err != nil {
						t.Errorf("mount %d: %v", i, err)
						return err
					}
					rel, _ := filepath.Rel(root, p)
					tree[rel] = b
					return nil
				})
			}
			trees[i] = tree
		})
	}
	wg.Wait()
	for i, m := range ms {
		sameTree(t, "mount "+itoa(i), trees[i], want)
		s := readStats(t, m.Dir)
		if s.Cache.Corrupt != 0 || s.Cache.DiskWriteErrors != 0 || s.Reads.Errors != 0 {
			t.Errorf("mount %d: %d corrupt entries, %d disk write errors, %d read errors", i, s.Cache.Corrupt, s.Cache.DiskWriteErrors, s.Reads.Errors)
		}
	}
	// A third mount finds everything the two wrote, intact.
	for _, m := range ms {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	m := mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir)...)
	sameTree(t, "third mount", readTree(t, filepath.Join(m.Dir, "version", "0")), want)
	if s := readStats(t, m.Dir); s.Storage.DataFileBytesRead != 0 || s.Cache.Corrupt != 0 {
		t.Errorf("third mount: %d data-file bytes read, %d corrupt entries", s.Storage.DataFileBytesRead, s.Cache.Corrupt)
	}
}
