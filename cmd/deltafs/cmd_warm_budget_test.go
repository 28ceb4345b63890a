package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dustin/go-humanize"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// TestWarmBudgetTooSmall: a warm whose data does not fit --cache-size
// exits 1 with one line saying how much it needs against the budget, and
// never says it warmed; a budget of the size it names then warms, and a
// mount with it reads nothing from the data files.
func TestWarmBudgetTooSmall(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 1000)
	cdir := t.TempDir()

	tooBig := regexp.MustCompile(`^deltafs: ` + regexp.QuoteMeta(table) +
		` version 0 does not fit the disk cache: its first (\d+) of 3000 samples already need more than --cache-size 1\.0 MiB \(about ([\d.]+ MiB) for all\); give a larger --cache-size, the same to the mount$`)
	out, code := runDF(t, nil, "", append([]string{"warm", table, "--version", "0", "--cache-dir", cdir, "--cache-size", "1MiB"}, imageFlags...)...)
	last := lastLine(out)
	mm := tooBig.FindStringSubmatch(last)
	if code != 1 || mm == nil || strings.Contains(out, "msg=warmed") {
		t.Fatalf("warm with a 1 MiB budget: exit %d, output:\n%s\nwant exit 1 and a last line matching %s", code, out, tooBig)
	}
	if done, _ := strconv.Atoi(mm[1]); done <= 0 || done >= 3000 {
		t.Errorf("stopped after %d samples, want 0 < n < 3000", done)
	}
	need, err := humanize.ParseBytes(mm[2])
	if err != nil || need <= 1<<20 {
		t.Fatalf("estimate %q: %v, want more than 1 MiB", mm[2], err)
	}

	// One shard of two says so.
	out, code = runDF(t, nil, "", append([]string{"warm", table, "--version", "0", "--shard", "1", "--cache-dir", cdir, "--cache-size", "1MiB", "--quiet"}, imageFlags...)...)
	if code != 1 || !strings.HasPrefix(lastLine(out), "deltafs: "+table+" version 0 shard 1 does not fit the disk cache: its first ") {
		t.Errorf("warm of shard 1 with a 1 MiB budget: exit %d\n%s", code, out)
	}

	// The estimate, with a margin (it is in proportion), is enough.
	budget := humanize.IBytes(need * 3 / 2)
	out, code = runDF(t, nil, "", append([]string{"warm", table, "--version", "0", "--cache-dir", cdir, "--cache-size", budget, "--quiet"}, imageFlags...)...)
	if code != 0 || !strings.Contains(out, "msg=warmed") {
		t.Fatalf("warm with --cache-size %s (from the estimate): exit %d\n%s", budget, code, out)
	}
	m := mounttest.Start(t, bin, table, append(imageFlags, "--cache-dir", cdir, "--cache-size", budget)...)
	readTree(t, filepath.Join(m.Dir, "version", "0"))
	if s := readStats(t, m.Dir); s.Storage.DataFileBytesRead != 0 || s.Reads.Errors != 0 {
		t.Errorf("after warm said yes: %d bytes read from data files, %d read errors", s.Storage.DataFileBytesRead, s.Reads.Errors)
	}
}

// TestWarmDiskTooFull: data that fits --cache-size but not the disk (the
// cache keeps 5% of it free) is not all kept: warm exits 1 saying how much
// was kept and why, instead of printing success over a cache a mount
// would miss in.
func TestWarmDiskTooFull(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 1000)
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount tmpfs (the tests run as root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	// Leave about 1.2 MiB: less than the ~2.5 MiB the version needs.
	filler := make([]byte, 4<<20-1200<<10)
	if err := os.WriteFile(filepath.Join(disk, "filler"), filler, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runDF(t, nil, "", append([]string{"warm", table, "--version", "0", "--cache-dir", filepath.Join(disk, "c"), "--quiet"}, imageFlags...)...)
	want := regexp.MustCompile(`^deltafs: ` + regexp.QuoteMeta(table) + ` version 0: the disk cache kept (\d+) of (\d+) entries \([\d.]+ [KM]iB of [\d.]+ MiB\): the filesystem of ` +
		regexp.QuoteMeta(filepath.Join(disk, "c")) + ` is too full \(the cache keeps 5% of it free\); a mount would read the rest from the data files$`)
	mm := want.FindStringSubmatch(lastLine(out))
	if code != 1 || mm == nil || strings.Contains(out, "msg=warmed") {
		t.Fatalf("warm on a full disk: exit %d, output:\n%s\nwant exit 1 and a last line matching %s", code, out, want)
	}
	if kept, _ := strconv.Atoi(mm[1]); mm[1] == mm[2] || kept == 0 {
		t.Errorf("kept %s of %s entries: want some, not all", mm[1], mm[2])
	}
}

// TestWarmVacuumedFileOneLine: a warm that meets a data file gone from
// storage exits 1 with one line naming the table, version and file once
// each, and the cause.
func TestWarmVacuumedFileOneLine(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:200], 100)
	files, err := filepath.Glob(filepath.Join(table, "*.parquet"))
	if err != nil || len(files) != 2 {
		t.Fatalf("want 2 data files: %v %v", files, err)
	}
	gone := filepath.Base(files[1])
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	out, code := runDF(t, nil, "", "warm", table, "--version", "0", "--image", "28x28", "--cache-dir", t.TempDir(), "--quiet")
	last := lastLine(out)
	if code != 1 || !strings.HasPrefix(last, "deltafs: "+table+" version 0: "+gone+": ") || !strings.Contains(last, "vacuumed") ||
		strings.Count(last, "version 0") != 1 || strings.Count(last, gone) != 1 || strings.Contains(out, "msg=warmed") {
		t.Fatalf("warm with a vacuumed file: exit %d, last line %q; want exit 1 and `deltafs: TABLE version 0: FILE: cause` naming each once", code, last)
	}
}
