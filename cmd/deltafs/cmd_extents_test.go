package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/gds"
	"github.com/deltafs/deltafs/internal/testkit"
)

// readSamples reads every sample file under a shard directory, by path
// relative to it.
func readSamples(t *testing.T, sd string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range samplesUnder(t, sd) {
		b, err := os.ReadFile(filepath.Join(sd, p))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	if len(out) == 0 {
		t.Fatalf("%s: no samples", sd)
	}
	return out
}

// preadExtent reads an extent from its cache file, failing the test when
// the extent is not 4 KiB-aligned inside cacheDir or cannot be read whole.
func preadExtent(t *testing.T, cacheDir string, e extents.Extent) []byte {
	t.Helper()
	if !e.Aligned() || !strings.HasPrefix(e.Path, cacheDir+"/") {
		t.Fatalf("extent %s: not 4 KiB-aligned inside the cache %s", e, cacheDir)
	}
	f, err := os.Open(e.Path)
	if err != nil {
		t.Fatalf("extent %s: %v", e, err)
	}
	defer f.Close()
	b := make([]byte, e.Length)
	if n, err := f.ReadAt(b, e.Offset); int64(n) != e.Length {
		t.Fatalf("extent %s: read %d bytes: %v", e, n, err)
	}
	return b
}

// checkExtentList reads the shard's _extents.tsv (which materialises the
// shard) and checks that every sample is listed once and that its extent
// holds exactly the sample file's bytes. It returns the extents.
func checkExtentList(t *testing.T, sd, cacheDir string, want map[string][]byte) []extents.Entry {
	t.Helper()
	entries, err := extents.ReadListFile(filepath.Join(sd, extents.ListName))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Fatalf("%s: extent list lists %d samples, the shard has %d", sd, len(entries), len(want))
	}
	seen := map[string]bool{}
	for _, e := range entries {
		w, ok := want[e.Sample]
		if !ok || seen[e.Sample] {
			t.Fatalf("extent list sample %q: unknown or listed twice", e.Sample)
		}
		seen[e.Sample] = true
		if got := preadExtent(t, cacheDir, e.Extent); !bytes.Equal(got, w) {
			t.Fatalf("%s: extent %s holds %d bytes that differ from the sample file's %d", e.Sample, e.Extent, len(got), len(w))
		}
		if e.Sum != extents.ChecksumOf(w) {
			t.Fatalf("%s: extent list checksum %s, the sample file's CRC-32 is %s", e.Sample, e.Sum, extents.ChecksumOf(w))
		}
	}
	return entries
}

// xattrExtent reads a sample file's extent attribute.
func xattrExtent(path string) (extents.Extent, error) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, extents.XattrName, buf)
	for errors.Is(err, unix.EINTR) {
		// The Go runtime's preemption signal interrupted the FUSE request
		// (the mount answers EINTR, as it should): ask again.
		n, err = unix.Getxattr(path, extents.XattrName, buf)
	}
	if err != nil {
		return extents.Extent{}, err
	}
	var e extents.Extent
	return e, e.UnmarshalText(buf[:n])
}

// checkXattrs checks every sample's extent attribute against its bytes.
func checkXattrs(t *testing.T, sd, cacheDir string, want map[string][]byte) map[string]extents.Extent {
	t.Helper()
	out := map[string]extents.Extent{}
	for p, w := range want {
		e, err := xattrExtent(filepath.Join(sd, p))
		if err != nil {
			t.Fatalf("%s: getxattr: %v", p, err)
		}
		if got := preadExtent(t, cacheDir, e); !bytes.Equal(got, w) {
			t.Fatalf("%s: xattr extent %s holds bytes that differ from the sample file", p, e)
		}
		if e.Sum != extents.ChecksumOf(w) {
			t.Fatalf("%s: xattr checksum %s, the sample file's CRC-32 is %s", p, e.Sum, extents.ChecksumOf(w))
		}
		out[p] = e
	}
	return out
}

func cacheRoot(dir string) string { return filepath.Join(dir, "deltafs-cache-v1") }

// importDigits imports digits (MNIST layout) as a new table with the
// project's importer, rowsPerFile rows per data file.
func importDigits(t *testing.T, bin string, digits []testkit.Digit, rowsPerFile int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "digits.npy")
	if err := os.WriteFile(src, testkit.MNISTNPY(digits), 0o644); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(t.TempDir(), "digits")
	if out, err := mounttest.Run(bin, "import", src, table, "--rows-per-file", strconv.Itoa(rowsPerFile)); err != nil {
		t.Fatalf("deltafs import: %v\n%s", err, out)
	}
	return table
}

// TestMountExtentsImages: on an imported MNIST-like table served as PNGs in
// two shards, the extent list and the xattr of every sample give extents that
// hold exactly the sample file's bytes; after `deltafs cache clear` they
// are materialised again, at the same places, with the same bytes.
func TestMountExtentsImages(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:300], 70)
	cacheDir := t.TempDir()
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--shards", "2", "--cache-dir", cacheDir, "--xattrs")
	total := 0
	for k := range 2 {
		sd := filepath.Join(m.Dir, "version", "0", "shard", strconv.Itoa(k))
		want := readSamples(t, sd)
		total += len(want)
		for p := range want {
			if !strings.HasSuffix(p, ".png") {
				t.Fatalf("%s: not a PNG", p)
			}
		}
		// The extent list is listed, and its size is right before any read.
		fi, err := os.Stat(filepath.Join(sd, extents.ListName))
		if err != nil {
			t.Fatal(err)
		}
		d, err := os.Open(sd)
		if err != nil {
			t.Fatal(err)
		}
		names, err := d.Readdirnames(3) // unsorted: the mount's order
		d.Close()
		if err != nil || len(names) < 2 || names[0] != "_samples.tsv" || names[1] != extents.ListName {
			t.Fatalf("listing starts %v (%v), want the sample list and the extent list", names, err)
		}
		before := checkExtentList(t, sd, cacheRoot(cacheDir), want)
		if raw, _ := os.ReadFile(filepath.Join(sd, extents.ListName)); int64(len(raw)) != fi.Size() {
			t.Fatalf("extent list: %d bytes, stat said %d", len(raw), fi.Size())
		}
		xa := checkXattrs(t, sd, cacheRoot(cacheDir), want)
		for _, e := range before {
			if xa[e.Sample] != e.Extent {
				t.Fatalf("%s: xattr %s, extent list %s", e.Sample, xa[e.Sample], e.Extent)
			}
		}
		// Evict everything behind the mount's back.
		if out, err := mounttest.Run(bin, "cache", "clear", "--cache-dir", cacheDir); err != nil {
			t.Fatalf("deltafs cache clear: %v\n%s", err, out)
		}
		if _, err := os.Stat(before[0].Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("entry still there after cache clear: %v", err)
		}
		// The xattr alone re-materialises its sample.
		one := before[len(before)/2]
		if e, err := xattrExtent(filepath.Join(sd, one.Sample)); err != nil || e != one.Extent {
			t.Fatalf("xattr after eviction: %s %v, want %s", e, err, one.Extent)
		} else if !bytes.Equal(preadExtent(t, cacheRoot(cacheDir), e), want[one.Sample]) {
			t.Fatal("re-materialised extent differs")
		}
		if _, err := os.Stat(before[0].Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("one xattr materialised other samples too: %v", err)
		}
		// Re-reading the extent list re-materialises the whole shard.
		after := checkExtentList(t, sd, cacheRoot(cacheDir), want)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatal("extents moved after re-materialisation")
		}
		checkXattrs(t, sd, cacheRoot(cacheDir), want)
	}
	if total != 300 {
		t.Fatalf("%d samples in 2 shards, want 300", total)
	}
}

// TestMountExtentsEvictedByBudget: with a disk budget that holds about one
// shard, materialising shard 1 evicts shard 0's samples; reading shard 0's
// extent list again brings them back.
func TestMountExtentsEvictedByBudget(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:300], 150)
	cacheDir := t.TempDir()
	// A PNG sample's entry is 8 KiB (header block + one payload block):
	// 150 samples a shard are 1.2 MiB.
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--shards", "2", "--cache-dir", cacheDir, "--cache-size", "1800KiB")
	sd := func(k int) string { return filepath.Join(m.Dir, "version", "0", "shard", strconv.Itoa(k)) }
	want0, want1 := readSamples(t, sd(0)), readSamples(t, sd(1))
	first := checkExtentList(t, sd(0), cacheRoot(cacheDir), want0)
	checkExtentList(t, sd(1), cacheRoot(cacheDir), want1)
	gone := 0
	for _, e := range first {
		if _, err := os.Stat(e.Path); errors.Is(err, os.ErrNotExist) {
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("materialising shard 1 evicted nothing of shard 0: the budget does not bite")
	}
	again := checkExtentList(t, sd(0), cacheRoot(cacheDir), want0)
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatal("extents moved after re-materialisation")
	}
	// Without --xattrs the attribute is not served.
	if _, err := xattrExtent(filepath.Join(sd(0), first[0].Sample)); !errors.Is(err, unix.ENOTSUP) {
		t.Fatalf("getxattr without --xattrs: %v, want ENOTSUP", err)
	}
	t.Logf("%d of shard 0's %d samples were evicted and re-materialised", gone, len(first))
}

// TestMountExtentsRawBytes: a table whose binary column is served as raw
// .bin files of many sizes (empty, below, at and above 4 KiB, several
// blocks) gives exact extents too.
func TestMountExtentsRawBytes(t *testing.T) {
	bin := mounttest.Binary(t)
	sizes := []int{0, 1, 7, 783, 4095, 4096, 4097, 8192, 20000, 100000}
	var rows []testkit.Digit
	for i := range 40 {
		b := make([]byte, sizes[i%len(sizes)])
		for j := range b {
			b[j] = byte(i*31 + j*7 + j>>8)
		}
		rows = append(rows, testkit.Digit{ID: int64(1000 + i), Label: int32(i % 3), Pixels: b})
	}
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "raw"))
	table.commit(time.Now(), digitSchema, chunk(rows, 15))
	cacheDir := t.TempDir()
	m := mounttest.Start(t, bin, table.dir, "--shards", "2", "--cache-dir", cacheDir, "--xattrs")
	n := 0
	for k := range 2 {
		sd := filepath.Join(m.Dir, "version", "0", "shard", strconv.Itoa(k))
		want := readSamples(t, sd)
		n += len(want)
		for p, b := range want {
			id, _ := strconv.Atoi(strings.TrimSuffix(p, filepath.Ext(p)))
			if id < 1000 || !bytes.Equal(b, rows[id-1000].Pixels) {
				t.Fatalf("%s: %d bytes, not the row's", p, len(b))
			}
		}
		checkXattrs(t, sd, cacheRoot(cacheDir), want)
		before := checkExtentList(t, sd, cacheRoot(cacheDir), want)
		for _, e := range before { // evict half the entries by hand
			if e.Length%2 == 0 {
				os.Remove(e.Path)
			}
		}
		checkXattrs(t, sd, cacheRoot(cacheDir), want)
		for _, e := range before {
			os.Remove(e.Path)
		}
		if after := checkExtentList(t, sd, cacheRoot(cacheDir), want); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatal("extents moved after re-materialisation")
		}
	}
	if n != len(rows) {
		t.Fatalf("%d samples, want %d", n, len(rows))
	}
}

// getxattrOps counts the GETXATTR requests in a --fuse-debug log.
func getxattrOps(log string) int { return strings.Count(log, "GETXATTR") }

// TestMountXattrsOff: without --xattrs, getxattr fails with ENOTSUP and
// `ls -l` of a shard costs no xattr round trips (the mount disables them:
// the kernel stops asking after the first ENOSYS, here the test's own
// getxattr); with --xattrs, ls asks for every file, which is why it is
// opt-in.
func TestMountXattrsOff(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:100], 100)
	counts := map[bool]int{}
	for _, on := range []bool{false, true} {
		flags := []string{"--image", "28x28", "--cache-dir", t.TempDir(), "--fuse-debug"}
		if on {
			flags = append(flags, "--xattrs")
		}
		m := mounttest.Start(t, bin, table, flags...)
		sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
		files := samplesUnder(t, sd)
		sort.Strings(files)
		_, err := xattrExtent(filepath.Join(sd, files[0]))
		if !on && !errors.Is(err, unix.ENOTSUP) {
			t.Fatalf("getxattr without --xattrs: %v, want ENOTSUP", err)
		}
		if on && err != nil {
			t.Fatalf("getxattr with --xattrs: %v", err)
		}
		if out, err := exec.Command("ls", "-l", sd).CombinedOutput(); err != nil {
			t.Fatalf("ls -l: %v\n%s", err, out)
		}
		if !on {
			// A non-extent attribute on a sample: ENODATA with --xattrs,
			// ENOTSUP without.
			if _, err := unix.Getxattr(filepath.Join(sd, files[1]), "user.other", nil); !errors.Is(err, unix.ENOTSUP) {
				t.Fatalf("getxattr user.other: %v", err)
			}
		} else if _, err := unix.Getxattr(filepath.Join(sd, files[1]), "user.other", nil); !errors.Is(err, syscall.ENODATA) {
			t.Fatalf("getxattr user.other with --xattrs: %v, want ENODATA", err)
		}
		// The debug log reaches us through a pipe: wait until it settles.
		for n := -1; n != getxattrOps(m.Log()); {
			n = getxattrOps(m.Log())
			time.Sleep(100 * time.Millisecond)
		}
		counts[on] = getxattrOps(m.Log())
	}
	if counts[false] != 1 {
		t.Errorf("without --xattrs: %d GETXATTR requests, want 1 (answered ENOSYS, after which the kernel never asks again)", counts[false])
	}
	if counts[true] < 100 {
		t.Errorf("ls -l with --xattrs: %d GETXATTR requests for 100 files; is the count measuring anything?", counts[true])
	}
	t.Logf("GETXATTR requests for two getxattr calls and ls -l of 100 samples: %d without --xattrs, %d with", counts[false], counts[true])
}

// TestMountExtentsUnreadableFile: a data file that vanishes after its
// shard was indexed fails only its own samples: the extent list still reads,
// the other file's samples have valid extents, the vanished file's samples
// have none (their cache files are missing, their sample files fail with
// EIO) and the mount log names the file. A mount that indexes the table
// after the file vanished leaves its samples out of the extent list.
func TestMountExtentsUnreadableFile(t *testing.T) {
	bin := mounttest.Binary(t)
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	rows := testkit.MNIST(t, testkit.MNISTTest)[:40]
	_, paths := table.commit(time.Now(), digitSchema, chunk(rows, 20))
	// The mount's --image check reads the first page of the first data
	// file by path: the file that vanishes is the other one, none of whose
	// pages is cached until read.
	vanish, keep := 0, 1
	if paths[0] < paths[1] {
		vanish, keep = 1, 0
	}
	inKept := map[string]bool{} // sample names of paths[keep]'s rows
	for _, r := range rows[keep*20 : keep*20+20] {
		inKept[strconv.FormatInt(r.ID, 10)+".png"] = true
	}
	cacheDir := t.TempDir()
	// --prefill 0: the listing below would otherwise start pushing every
	// listed sample into the page cache, reading (and caching) the pages
	// of the file that is to vanish before it does.
	m := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--cache-dir", cacheDir, "--prefill", "0")
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	names := samplesUnder(t, sd) // indexes the shard
	if len(names) != 40 {
		t.Fatalf("%d samples, want 40", len(names))
	}
	// Read the samples of paths[keep] only (paths[vanish]'s pages stay uncached).
	good := map[string][]byte{}
	for _, n := range names {
		if inKept[n] {
			b, err := os.ReadFile(filepath.Join(sd, n))
			if err != nil {
				t.Fatal(err)
			}
			good[n] = b
		}
	}
	if err := os.Remove(filepath.Join(table.dir, paths[vanish])); err != nil {
		t.Fatal(err)
	}
	entries, err := extents.ReadListFile(filepath.Join(sd, extents.ListName))
	if err != nil {
		t.Fatalf("extent list with one vanished data file: %v", err)
	}
	if len(entries) != 40 {
		t.Fatalf("%d extent list lines, want 40", len(entries))
	}
	for _, e := range entries {
		if w, ok := good[e.Sample]; ok {
			if !bytes.Equal(preadExtent(t, cacheRoot(cacheDir), e.Extent), w) {
				t.Fatalf("%s: extent differs from the sample", e.Sample)
			}
			continue
		}
		if _, err := os.Stat(e.Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s (vanished data file): cache file %v", e.Sample, err)
		}
		if e.Sum.Known() {
			t.Fatalf("%s (vanished data file): checksum %s, want unknown", e.Sample, e.Sum)
		}
		if _, err := os.ReadFile(filepath.Join(sd, e.Sample)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("%s (vanished data file): read %v, want EIO", e.Sample, err)
		}
	}
	if len(good) != 20 {
		t.Fatalf("%d samples of the second file, want 20", len(good))
	}
	deadline := time.Now().Add(5 * time.Second) // the log comes through a pipe
	for log := m.Log(); !strings.Contains(log, "not materialised") || !strings.Contains(log, paths[vanish]); log = m.Log() {
		if time.Now().After(deadline) {
			t.Fatalf("mount log does not name the vanished file %s:\n%s", paths[vanish], log)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Indexed after the file vanished: the shard fails whole (EIO), or
	// with --skip-unreadable lists the readable samples only.
	m2 := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--cache-dir", t.TempDir())
	if _, err := extents.ReadListFile(filepath.Join(m2.Dir, "version", "0", "shard", "0", extents.ListName)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("extent list of a shard whose data file vanished before indexing: %v, want EIO", err)
	}
	m3 := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--cache-dir", t.TempDir(), "--skip-unreadable")
	entries, err = extents.ReadListFile(filepath.Join(m3.Dir, "version", "0", "shard", "0", extents.ListName))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 20 {
		t.Fatalf("--skip-unreadable: %d extent list lines, want the 20 readable samples", len(entries))
	}
	for _, e := range entries {
		if _, ok := good[e.Sample]; !ok {
			t.Fatalf("extent list lists %s of the vanished file", e.Sample)
		}
	}
}

// TestMountXattrsNeedDiskCache: --xattrs with --cache-dir none is bad
// usage (exit 2) with a message saying why.
func TestMountXattrsNeedDiskCache(t *testing.T) {
	bin := mounttest.Binary(t)
	mnt := t.TempDir()
	out, err := mounttest.Run(bin, "mount", "../../testdata/delta/dat-basic_append", mnt, "--cache-dir", "none", "--xattrs")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "--xattrs needs a disk cache") {
		t.Fatalf("exit %v, output %q", err, out)
	}
	if mounttest.Mounted(mnt) {
		t.Fatal("mounted anyway")
	}
}

// damageEntries damages three kinds of cache entries of an extent list's
// samples behind the mount's back: a flipped payload byte, a truncated
// file, and two entries' files swapped (equal lengths: only the checksum,
// or the entry's key, can tell). It returns the damaged samples.
func damageEntries(t *testing.T, entries []extents.Entry) []string {
	t.Helper()
	flip, cut, a, b := entries[0], entries[1], entries[2], entries[3]
	testkit.FlipByte(t, flip.Path, flip.Offset+flip.Length/2)
	if err := os.Truncate(cut.Path, cut.Offset+cut.Length/2); err != nil {
		t.Fatal(err)
	}
	if a.Length != b.Length {
		t.Fatalf("swap needs equal lengths: %d, %d", a.Length, b.Length)
	}
	for _, mv := range [][2]string{{a.Path, a.Path + ".swap"}, {b.Path, a.Path}, {a.Path + ".swap", b.Path}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	return []string{flip.Sample, cut.Sample, a.Sample, b.Sample}
}

// TestMountExtentsCorruptEntries: cache entries damaged after a shard's
// _extents.tsv was read (a flipped payload byte, a truncation, two files
// swapped) are caught by readers and repaired by the mount:
//   - a gds.Reader (host path) reading the shard through the extent list it
//     read before the damage returns exactly the sample files' bytes,
//     counting the four damaged samples as corrupt and none from the mount;
//   - its read of the extent list again made the mount drop and rewrite them
//     (the mount log names the dropped entries), so the extent list's
//     extents hold the true bytes and its checksums are their CRC-32;
//   - the xattr of a sample whose entry is damaged rewrites it too, and a
//     sample read through an extent taken before the damage is right;
//   - _extents.tsv is as long as stat said at lookup, and a first read
//     at an offset other than 0 serves materialised lines, not the
//     lookup-time shape with unknown checksums.
func TestMountExtentsCorruptEntries(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:120], 60)
	cacheDir := t.TempDir()
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--shards", "2", "--cache-dir", cacheDir, "--xattrs")
	sd := filepath.Join(m.Dir, "version", "0", "shard", "1")
	want := readSamples(t, sd)

	// A first read at offset 1000 of an extent list never read: materialised.
	mp := filepath.Join(sd, extents.ListName)
	fi, err := os.Stat(mp)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	tail := make([]byte, fi.Size())
	n, err := unix.Pread(fd, tail, 1000)
	unix.Close(fd)
	if err != nil || int64(n) != fi.Size()-1000 {
		t.Fatalf("pread at 1000: %d %v (size %d)", n, err, fi.Size())
	}
	if bytes.Contains(tail[:n], []byte("--------")) {
		t.Fatalf("a first read at offset 1000 served unknown checksums:\n%s", tail[:n])
	}
	before := checkExtentList(t, sd, cacheRoot(cacheDir), want)
	full, err := os.ReadFile(mp)
	if err != nil || int64(len(full)) != fi.Size() || !bytes.Equal(full[1000:], tail[:n]) {
		t.Fatalf("extent list: %d bytes (stat at lookup: %d), tail equal %v, %v", len(full), fi.Size(), bytes.Equal(full[1000:], tail[:n]), err)
	}

	r, err := gds.NewReader(gds.Options{Mode: gds.ModeHost})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := extents.OpenShard(sd)
	if err != nil {
		t.Fatal(err)
	}
	bad := damageEntries(t, before)
	names := s.Samples()
	exts, _ := s.Extents(nil)
	_, size := r.BatchLayout(exts)
	dst := make(gds.HostBuffer, size)
	res, err := r.ReadSamples(t.Context(), s, nil, dst)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if got := dst[res.Offsets[i] : res.Offsets[i]+exts[i].Length]; !bytes.Equal(got, want[name]) {
			t.Fatalf("%s: ReadSamples returned bytes that differ from the sample file", name)
		}
	}
	if res.Corrupt != len(bad) || res.FromMount != 0 {
		t.Fatalf("%d corrupt, %d from the mount; want %d corrupt, re-materialised", res.Corrupt, res.FromMount, len(bad))
	}
	after := checkExtentList(t, sd, cacheRoot(cacheDir), want)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("extents moved after re-materialisation")
	}
	deadline := time.Now().Add(5 * time.Second) // the log comes through a pipe
	for log := m.Log(); strings.Count(log, "dropping corrupt entry") < 2 || !strings.Contains(log, "entry holds another key"); log = m.Log() {
		if time.Now().After(deadline) {
			t.Fatalf("mount log does not report the flipped, truncated and swapped entries:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The xattr: its getxattr verifies the entry and rewrites it.
	one := after[5]
	testkit.FlipByte(t, one.Path, one.Offset)
	if e, err := xattrExtent(filepath.Join(sd, one.Sample)); err != nil || e != one.Extent {
		t.Fatalf("xattr after damage: %s %v, want %s", e, err, one.Extent)
	}
	if !bytes.Equal(preadExtent(t, cacheRoot(cacheDir), one.Extent), want[one.Sample]) {
		t.Fatal("getxattr did not rewrite the damaged entry")
	}
	// An extent taken before the damage: the reader gets the true bytes.
	two := after[6]
	testkit.FlipByte(t, two.Path, two.Offset+two.Length-1)
	buf := make(gds.HostBuffer, two.Length)
	got, err := r.ReadSampleExtent(t.Context(), filepath.Join(sd, two.Sample), two.Extent, buf)
	if err != nil || !got.Corrupt || !bytes.Equal(buf, want[two.Sample]) {
		t.Fatalf("ReadSampleExtent after damage: %+v %v, bytes equal %v", got, err, bytes.Equal(buf, want[two.Sample]))
	}
}
