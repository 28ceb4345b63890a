package main

import (
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// metricsURL finds the metrics URL the mount logged.
func metricsURL(t *testing.T, m *mounttest.Mount) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving metrics" url=(\S+)`)
	if g := re.FindStringSubmatch(m.Log()); g != nil {
		return g[1]
	}
	t.Fatalf("the mount logged no metrics URL:\n%s", m.Log())
	return ""
}

// scrape GETs the metrics and returns the value of each unlabelled series
// and of labelled ones by their full name ({...} included).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMountMetrics: --metrics-addr serves Prometheus metrics of the running
// mount, and the storage, cache and FUSE read series move when files are
// read.
func TestMountMetrics(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:1000], 500)
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--cache-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:0")
	url := metricsURL(t, m)
	before := scrape(t, url)
	for _, name := range []string{"deltafs_storage_data_file_read_bytes_total", `deltafs_cache_hits_total{tier="memory"}`,
		`deltafs_cache_misses_total{tier="disk"}`, "deltafs_fuse_read_seconds_count", "deltafs_sample_reads_total", "deltafs_prefill_files_total", "deltafs_prefill_bytes_total", "go_goroutines"} {
		if _, ok := before[name]; !ok {
			t.Errorf("no series %s", name)
		}
	}
	n := len(readTree(t, filepath.Join(m.Dir, "latest", "shard", "0")))
	after := scrape(t, url)
	if n != 1000 {
		t.Fatalf("read %d files, want 1000", n)
	}
	for _, c := range []struct {
		name string
		min  float64
	}{
		// The data files, nearly all of them (their pixel column is most
		// of each file); at most once, below.
		{"deltafs_storage_data_file_read_bytes_total", 0.8 * float64(dataFileBytes(t, table))},
		{"deltafs_fetch_pages_decoded_total", 1},
		{`deltafs_cache_misses_total{tier="disk"}`, 1},
		{`deltafs_cache_disk_writes_total`, 1},
		{"deltafs_sample_reads_total", 1000},
		{"deltafs_fuse_read_seconds_count", 1000},
		{"deltafs_prefill_files_total", 1},
	} {
		d := after[c.name] - before[c.name]
		if c.name == "deltafs_fuse_read_seconds_count" {
			// A file the prefill pushed into the page cache (after the
			// listing) is read with no FUSE READ.
			d += after["deltafs_prefill_files_total"] - before["deltafs_prefill_files_total"]
		}
		if c.name == "deltafs_storage_data_file_read_bytes_total" {
			// Since the mount started: its --image check read the first
			// page before the first scrape, and the reads find it cached.
			d = after[c.name]
		}
		if d < c.min {
			t.Errorf("%s moved by %v reading 1000 files, want at least %v", c.name, d, c.min)
		}
	}
	// Read once: the index's scan and the reads share each file's tail,
	// and the pages the reads need come through one cache.
	if d, most := after["deltafs_storage_data_file_read_bytes_total"], 1.2*float64(dataFileBytes(t, table)); d > most {
		t.Errorf("%v data file bytes read for a table of %v: read more than once", d, most/1.2)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("metrics still served after unmount")
	}
}

// TestMountMetricsAddrBusy: a taken address fails the mount with one line.
func TestMountMetricsAddrBusy(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:10], 10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	m, err := mounttest.StartAt(bin, table, dir, "--image", "28x28", "--cache-dir", "none", "--metrics-addr", ln.Addr().String())
	if err == nil {
		_ = m.Stop()
		t.Fatal("mounted with a busy metrics address")
	}
	select {
	case <-m.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("still running")
	}
	if last := lastLine(m.Log()); !strings.Contains(last, "--metrics-addr "+ln.Addr().String()) || !strings.Contains(last, "address already in use") {
		t.Errorf("last line %q", last)
	}
	if mounttest.Mounted(dir) {
		mounttest.Unmount(dir)
		t.Error("left mounted")
	}
}

// dataFileBytes is the size of the table's data files (*.parquet) in all.
func dataFileBytes(t *testing.T, table string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(table, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("the table's data files: %d bytes, %v", n, err)
	}
	return n
}
