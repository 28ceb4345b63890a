package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// writeTinyNpy writes n records (id <i8, data |u1 (16,)): record i's data
// is i and 7*i as two little-endian uint64s.
func writeTinyNpy(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(testkit.NPYHeader(fmt.Sprintf("{'descr': [('id', '<i8'), ('data', '|u1', (16,))], 'fortran_order': False, 'shape': (%d,), }", n)))
	var rec [24]byte
	for i := range n {
		binary.LittleEndian.PutUint64(rec[0:], uint64(i))
		binary.LittleEndian.PutUint64(rec[8:], uint64(i))
		binary.LittleEndian.PutUint64(rec[16:], uint64(7*i))
		w.Write(rec[:])
	}
	must(t, w.Flush())
	must(t, f.Close())
}

// tinySample is the content of sample i of writeTinyNpy's table.
func tinySample(i int) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(i))
	binary.LittleEndian.PutUint64(b[8:], uint64(7*i))
	return b[:]
}

// rssBytes is the resident memory of process pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestMountMillionSamples: a version of 1,000,000 samples in one shard
// lists every name (checked one by one), reads a random thousand with
// their true bytes, keeps the server's memory well under what one inode
// object per file took (loosely: 400 MB), and after the kernel drops its
// inodes mid-epoch (drop_caches), the same files have the same inode
// numbers and bytes.
func TestMountMillionSamples(t *testing.T) {
	const n = 1_000_000
	bin := mounttest.Binary(t)
	dir := t.TempDir()
	npy := filepath.Join(dir, "tiny.npy")
	writeTinyNpy(t, npy, n)
	table := filepath.Join(dir, "tiny")
	if out, err := mounttest.Run(bin, "import", npy, table, "--rows-per-file", "100000"); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	m := mounttest.Start(t, bin, table, "--cache-dir", "none", "--mem-cache", "64MiB")
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")

	start := time.Now()
	f, err := os.Open(sd)
	must(t, err)
	names, err := f.Readdirnames(-1)
	f.Close()
	must(t, err)
	t.Logf("listed %d entries in %v", len(names), time.Since(start))
	if len(names) != n+1 {
		t.Fatalf("%d entries, want %d samples and the sample list", len(names), n)
	}
	for i, name := range names[1:] {
		if want := strconv.Itoa(i) + ".bin"; name != want {
			t.Fatalf("entry %d is %q, want %q", i+1, name, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := make([]int, 1000)
	inos := map[int]uint64{}
	for j := range pick {
		i := rng.IntN(n)
		pick[j] = i
		p := filepath.Join(sd, strconv.Itoa(i)+".bin")
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, tinySample(i)) {
			t.Fatalf("sample %d: %v, %x", i, err, b)
		}
		var st syscall.Stat_t
		must(t, syscall.Stat(p, &st))
		inos[i] = st.Ino
	}
	rss := rssBytes(t, m.Pid())
	t.Logf("server resident memory after listing and reading: %d MB", rss>>20)
	if rss > 400<<20 {
		t.Errorf("server resident memory %d MB after listing 1,000,000 samples, want well under 400 MB", rss>>20)
	}
	// The kernel forgets its inodes and dentries; the same paths come back
	// with the same numbers and bytes.
	must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0o200))
	for _, i := range pick {
		p := filepath.Join(sd, strconv.Itoa(i)+".bin")
		var st syscall.Stat_t
		must(t, syscall.Stat(p, &st))
		if st.Ino != inos[i] {
			t.Fatalf("sample %d: inode %d after the kernel forgot it, was %d", i, st.Ino, inos[i])
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, tinySample(i)) {
			t.Fatalf("sample %d after drop_caches: %v", i, err)
		}
	}
	// The sample list streams every line.
	mf, err := os.Open(filepath.Join(sd, "_samples.tsv"))
	must(t, err)
	defer mf.Close()
	sc := bufio.NewScanner(mf)
	lines := 0
	for sc.Scan() {
		if want := fmt.Sprintf("%d.bin\t16\t\t%d", lines, lines); sc.Text() != want {
			t.Fatalf("sample list line %d: %q, want %q", lines, sc.Text(), want)
		}
		lines++
	}
	must(t, sc.Err())
	if lines != n {
		t.Fatalf("sample list: %d lines", lines)
	}
}
