package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The tar view (MOUNT/version/N/shard/K.tar, one WebDataset tar per shard):
// shard 0's tar read front to back by one reader with 1 MiB sequential
// reads, as a WebDataset loader streams it, on the same table and mount
// flags as the per-file epochs, in the same run:
//
//   - cold: a fresh mount with an empty cache. The shard's index is built
//     before the clock starts (by the tar's first stat: its size is exact
//     at stat), as the per-file reader builds it before its clock (reading
//     the manifest), so the figure is the epoch alone: samples in the
//     shard / seconds. In bytes mode that build reads and decodes every
//     data page into the cache, so the epoch after it reads the cache, for
//     the tar and the per-file epoch alike; the figure with the build's
//     seconds added is recorded too. The sample bytes per second (payload,
//     not the tar's headers) compare with the in-process decode baseline.
//     The data-file bytes the mount read (index build and epoch,
//     .deltafs/stats) are set over the table's data-file bytes.
//   - kernel-warm: the same tar read again on the same mount (page cache),
//     MB/s of tar bytes, next to the same tar copied to tmpfs once per
//     invocation and read the same way.

// tarReadBuf is the reader's read size: one read(2) per MiB.
const tarReadBuf = 1 << 20

func tarFigures() []figure {
	return []figure{
		{"cold tar epoch / cold per-file epoch, 8 threads (784 B; samples/s)", "mnist-784B/tar/deltafs cold", "mnist-784B/8t/deltafs cold", "≥ 10", atLeast(10)},
		{"cold tar epoch / cold per-file epoch, 1 thread (784 B; samples/s)", "mnist-784B/tar/deltafs cold", "mnist-784B/1t/deltafs cold", "report", nil},
		{"kernel-warm tar read / the tar on tmpfs (784 B; MB/s)", "mnist-784B/tar/deltafs kernel-warm", "mnist-784B/tar/tmpfs copy", "≥ 0.9", atLeast(0.9)},
		{"kernel-warm tar read / the tar on tmpfs (100 KB; MB/s)", "jpeg-100KB/tar/deltafs kernel-warm", "jpeg-100KB/tar/tmpfs copy", "≥ 0.9", atLeast(0.9)},
		{"cold tar epoch / in-process decode (100 KB; sample MB/s)", "jpeg-100KB/tar/deltafs cold, sample bytes", "jpeg-100KB/in-process parquet-go decode", "≥ 0.7", atLeast(0.7)},
		{"cold tar epoch with its index build (the tar's first stat) / in-process decode (100 KB; sample MB/s)", "jpeg-100KB/tar/deltafs cold, index build included, sample bytes", "jpeg-100KB/in-process parquet-go decode", "report", nil},
		{"cold tar epoch with its index build, from the tar's first stat (784 B; samples/s)", "mnist-784B/tar/deltafs cold, index build included", "", "report", nil},
		{"Python tarfile stream of the tar, cold / Python per-file open+read, cold, 8 processes (784 B; samples/s)", "mnist-784B/tar/python tarfile, cold", "mnist-784B/python/8p/deltafs cold", "report", nil},
		{"Python tarfile stream of the tar, kernel-warm / the tar on tmpfs (784 B; samples/s)", "mnist-784B/tar/python tarfile, kernel-warm", "mnist-784B/tar/python tarfile, tmpfs copy", "report", nil},
		{"data bytes read, cold tar epoch / data file bytes (784 B)", "mnist-784B/tar/data bytes read / data file bytes", "", "≤ 1.1", atMost(1.1)},
		{"data bytes read, cold tar epoch / data file bytes (100 KB)", "jpeg-100KB/tar/data bytes read / data file bytes", "", "≤ 1.1", atMost(1.1)},
	}
}

// tarEpochs measures shard 0's tar view of table, mounted with flags, for
// one run: cold, data-file bytes, kernel-warm, and the tmpfs copy.
func (b *bench) tarEpochs(w, table string, flags ...string) error {
	m, done, err := b.mountCold(table, flags...)
	if err != nil {
		return err
	}
	defer done()
	shard := filepath.Join(m.dir, "latest", "shard")
	tarPath := filepath.Join(shard, "0.tar")
	// The tar's size is exact at stat: the first stat builds the shard's
	// index (in bytes mode, decoding every data page into the cache).
	start := time.Now()
	st, err := os.Stat(tarPath)
	if err != nil {
		return err
	}
	build := time.Since(start).Seconds()
	n, payload, err := manifestTotals(filepath.Join(shard, "0"))
	if err != nil {
		return err
	}
	secs, err := readSequential(tarPath, st.Size())
	if err != nil {
		return err
	}
	b.add(w+"/tar/deltafs cold", "samples/s", float64(n)/secs)
	b.add(w+"/tar/deltafs cold, sample bytes", "MB/s", float64(payload)/secs/1e6)
	b.add(w+"/tar/deltafs cold, tar bytes", "MB/s", float64(st.Size())/secs/1e6)
	b.add(w+"/tar/index build (first stat of the tar)", "s", build)
	b.add(w+"/tar/deltafs cold, index build included", "samples/s", float64(n)/(build+secs))
	b.add(w+"/tar/deltafs cold, index build included, sample bytes", "MB/s", float64(payload)/(build+secs)/1e6)
	// .deltafs/stats is fresh a kernel tick after the last access.
	time.Sleep(20 * time.Millisecond)
	s, err := m.stats()
	if err != nil {
		return err
	}
	total, err := dataFileBytes(table)
	if err != nil {
		return err
	}
	b.add(w+"/tar/data bytes read / data file bytes", "ratio", number(s, statDataBytes)/float64(total))

	if secs, err = readSequential(tarPath, st.Size()); err != nil {
		return err
	}
	b.add(w+"/tar/deltafs kernel-warm", "MB/s", float64(st.Size())/secs/1e6)
	copyPath := filepath.Join(shmRoot, w+".tar")
	if err := copyOnce(tarPath, copyPath); err != nil {
		return err
	}
	if secs, err = readSequential(copyPath, st.Size()); err != nil {
		return err
	}
	b.add(w+"/tar/tmpfs copy", "MB/s", float64(st.Size())/secs/1e6)
	// Python's tarfile, streaming, as a WebDataset-style loader reads:
	// on a second fresh mount (cold, its first stat before the clock as
	// above), then again there (kernel-warm), and on the tmpfs copy.
	m2, done2, err := b.mountCold(table, flags...)
	if err != nil {
		return err
	}
	defer done2()
	tar2 := filepath.Join(m2.dir, "latest", "shard", "0.tar")
	if _, err := os.Stat(tar2); err != nil {
		return err
	}
	for _, r := range []struct{ name, path string }{{"cold", tar2}, {"kernel-warm", tar2}, {"tmpfs copy", copyPath}} {
		secs, err := b.pyTar(r.path, n)
		if err != nil {
			return err
		}
		b.add(w+"/tar/python tarfile, "+r.name, "samples/s", float64(n)/secs)
	}
	return nil
}

// pyTar streams the tar at path with Python's tarfile
// (bench/scripts/py_tar_read.py) and returns the seconds it took; the
// members read must be the n samples' (with their .cls members, when
// the tar has classes).
func (b *bench) pyTar(path string, n int) (float64, error) {
	out, err := run(b.python, "bench/scripts/py_tar_read.py", path)
	if err != nil {
		return 0, err
	}
	var r struct {
		Members int     `json:"members"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return 0, fmt.Errorf("py_tar_read printed %q: %w", out, err)
	}
	if r.Members != n && r.Members != 2*n {
		return 0, fmt.Errorf("py_tar_read read %d members of %s, want %d samples (or with their classes, %d)", r.Members, path, n, 2*n)
	}
	return r.Seconds, nil
}

// manifestTotals counts a shard's samples and their bytes from its
// _samples.tsv (path, bytes, class, id). Reading it builds the shard's
// index, as the per-file reader's does before its clock.
func manifestTotals(root string) (n int, bytes int64, err error) {
	data, err := os.ReadFile(filepath.Join(root, "_samples.tsv"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 2 {
			return 0, 0, fmt.Errorf("%s: _samples.tsv line %q", root, line)
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: _samples.tsv line %q: %w", root, line, err)
		}
		n, bytes = n+1, bytes+size
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("%s: no samples", root)
	}
	return n, bytes, nil
}

// readSequential reads path to its end with tarReadBuf reads and returns
// the seconds from open to close; reading other than want bytes fails.
func readSequential(path string, want int64) (float64, error) {
	buf := make([]byte, tarReadBuf)
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	var got int64
	for {
		k, err := f.Read(buf)
		got += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	secs := time.Since(start).Seconds()
	if got != want {
		return 0, fmt.Errorf("%s: read %d bytes, its size is %d", path, got, want)
	}
	return secs, nil
}

// copyOnce copies src to dst unless dst exists.
func copyOnce(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst + ".tmp")
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(dst+".tmp", dst)
}
