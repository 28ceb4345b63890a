package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// Special files in a table: a named pipe or a link to a device where the
// log or the data should be never blocks and never reads as data. Every
// command answers within a bound, with one line naming the file and its
// kind; a mount fails the file's samples (EIO) and logs it.

// replaceWith replaces the file at path with a named pipe ("fifo") or a
// symbolic link to /dev/zero ("zero").
func replaceWith(t *testing.T, path, kind string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case "fifo":
		err = syscall.Mkfifo(path, 0o644)
	case "zero":
		err = os.Symlink("/dev/zero", path)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runBounded runs the deltafs binary (runBin) and fails the test when it
// runs for longer than limit.
func runBounded(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = runBin(t, mounttest.Binary(t), limit, args...)
	if code == -1 {
		t.Fatalf("deltafs %s still running after %s (killed)\nstderr: %s", strings.Join(args, " "), limit, stderr)
	}
	return stdout, stderr, code
}

// basicAppendFile is a data file of dat-basic_append added at version 1
// and live at 2.
const basicAppendFile = "part-00000-0d98e500-5e7c-47d2-a4f1-ba0642db004c-c000.snappy.parquet"

func TestLogCatSpecialFiles(t *testing.T) {
	const limit = 30 * time.Second
	kinds := map[string]string{"fifo": "named pipe", "zero": "character device"}
	oneLine := func(t *testing.T, what, stderr string, code int, want *regexp.Regexp) {
		t.Helper()
		if code != 1 || !want.MatchString(stderr) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line matching %s", what, code, stderr, want)
		}
	}
	for kind, name := range kinds {
		t.Run("commit "+kind, func(t *testing.T) {
			table := testkit.CopyTable(t, "dat-basic_append")
			replaceWith(t, filepath.Join(table, "_delta_log", "00000000000000000002.json"), kind)
			want := regexp.MustCompile(`^deltafs: ` + regexp.QuoteMeta(table) + ` version 2: _delta_log/00000000000000000002\.json: not a regular file \(` + name + `\)\n$`)
			_, stderr, code := runBounded(t, limit, "log", table)
			oneLine(t, "log", stderr, code, want)
			_, stderr, code = runBounded(t, limit, "cat", table)
			oneLine(t, "cat", stderr, code, want)
			// The versions before it stay readable.
			out, stderr, code := runBounded(t, limit, "cat", table, "--version", "1")
			if code != 0 || strings.Count(out, "\n") != 5 {
				t.Errorf("cat --version 1: exit %d, %d rows, stderr %q; want the 5 rows of version 1", code, strings.Count(out, "\n"), stderr)
			}
		})
		t.Run("data file "+kind, func(t *testing.T) {
			table := testkit.CopyTable(t, "dat-basic_append")
			replaceWith(t, filepath.Join(table, basicAppendFile), kind)
			// log reads no data file here (the adds carry numRecords).
			out, stderr, code := runBounded(t, limit, "log", table)
			if code != 0 || !strings.Contains(out, "delta-rs.Write  3      7") {
				t.Errorf("log: exit %d, out %q, stderr %q", code, out, stderr)
			}
			_, stderr, code = runBounded(t, limit, "cat", table)
			oneLine(t, "cat", stderr, code, regexp.MustCompile(`^deltafs: `+regexp.QuoteMeta(table)+` version 2: `+regexp.QuoteMeta(basicAppendFile)+`: not a regular file \(`+name+`\)\n$`))
		})
		t.Run("checkpoint "+kind, func(t *testing.T) {
			// The commits before the checkpoint are gone (log cleanup):
			// versions 2 and 3 need it.
			table := testkit.CopyTable(t, "dat-with_checkpoint")
			for _, v := range []string{"00000000000000000000.json", "00000000000000000001.json"} {
				if err := os.Remove(filepath.Join(table, "_delta_log", v)); err != nil {
					t.Fatal(err)
				}
			}
			replaceWith(t, filepath.Join(table, "_delta_log", "00000000000000000002.checkpoint.parquet"), kind)
			want := regexp.MustCompile(`^deltafs: ` + regexp.QuoteMeta(table) + ` version \d+: _delta_log/00000000000000000002\.checkpoint\.parquet: not a regular file \(` + name + `\)\n$`)
			_, stderr, code := runBounded(t, limit, "log", table)
			oneLine(t, "log", stderr, code, want)
			_, stderr, code = runBounded(t, limit, "cat", table)
			oneLine(t, "cat", stderr, code, want)
		})
		t.Run("_last_checkpoint "+kind, func(t *testing.T) {
			// Only a hint: ignored with a warning, the table reads.
			table := testkit.CopyTable(t, "dat-with_checkpoint")
			replaceWith(t, filepath.Join(table, "_delta_log", "_last_checkpoint"), kind)
			out, stderr, code := runBounded(t, limit, "log", table)
			if code != 0 || strings.Count(out, "\n") != 5 {
				t.Errorf("log: exit %d, out %q; want the 4 versions", code, out)
			}
			if !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "_delta_log/_last_checkpoint: not a regular file ("+name+")") {
				t.Errorf("log: no warning about _last_checkpoint: %q", stderr)
			}
			out, _, code = runBounded(t, limit, "cat", table)
			if code != 0 || strings.Count(out, "\n") != 5 {
				t.Errorf("cat: exit %d, out %q", code, out)
			}
		})
	}
}

// TestMountSpecialDataFile: a data file that is a named pipe or a link to
// /dev/zero is never opened for reading (no hang): the shard that needs it
// fails with EIO and a log line naming the file, its version and kind;
// with --skip-unreadable the other samples read; SIGTERM unmounts.
func TestMountSpecialDataFile(t *testing.T) {
	bin := mounttest.Binary(t)
	for _, kind := range []string{"fifo", "zero"} {
		t.Run("image "+kind, func(t *testing.T) {
			digits := testkit.MNIST(t, testkit.MNISTTest)[:300]
			table := newDeltaTable(t, filepath.Join(t.TempDir(), "digits"))
			_, paths := table.commit(time.Now(), digitSchema, chunk(digits, 100))
			replaceWith(t, filepath.Join(table.dir, paths[1]), kind)
			m := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--cache-dir", "none")
			sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
			if _, err := os.ReadDir(sd); !errors.Is(err, syscall.EIO) {
				t.Fatalf("listing: %v, want EIO", err)
			}
			s := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--cache-dir", "none", "--skip-unreadable")
			ok, eio := readAllBounded(t, filepath.Join(s.Dir, "version", "0", "shard", "0"))
			if ok != 200 || eio != 0 {
				t.Fatalf("--skip-unreadable: %d samples read, %d failed with EIO; want 200 and 0", ok, eio)
			}
			checkLoggedAndStop(t, m, paths[1], "0", kind)
		})
		t.Run("json "+kind, func(t *testing.T) {
			table := testkit.CopyTable(t, "dat-basic_append")
			replaceWith(t, filepath.Join(table, basicAppendFile), kind)
			m := mounttest.Start(t, bin, table, "--cache-dir", "none")
			if _, err := os.ReadDir(filepath.Join(m.Dir, "version", "2", "shard", "0")); !errors.Is(err, syscall.EIO) {
				t.Fatalf("listing: %v, want EIO", err)
			}
			s := mounttest.Start(t, bin, table, "--cache-dir", "none", "--skip-unreadable")
			ok, eio := readAllBounded(t, filepath.Join(s.Dir, "version", "2", "shard", "0"))
			if ok != 5 || eio != 0 {
				t.Fatalf("--skip-unreadable: %d samples read, %d failed with EIO; want 5 and 0", ok, eio)
			}
			checkLoggedAndStop(t, m, basicAppendFile, "2", kind)
		})
	}
}

// readAllBounded reads every sample under dir (60 s at most), counting the
// reads that succeed and those that fail with EIO; any other outcome, or
// an empty sample, fails the test.
func readAllBounded(t *testing.T, dir string) (ok, eio int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range samplesUnder(t, dir) {
			b, err := os.ReadFile(filepath.Join(dir, p))
			switch {
			case err == nil && len(b) > 0:
				ok++
			case errors.Is(err, syscall.EIO):
				eio++
			default:
				t.Errorf("%s: %d bytes, %v", p, len(b), err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("reading the samples still blocked after 60s")
	}
	return ok, eio
}

func checkLoggedAndStop(t *testing.T, m *mounttest.Mount, file, version, kind string) {
	t.Helper()
	kinds := map[string]string{"fifo": "named pipe", "zero": "character device"}
	log := m.Log()
	if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, " version "+version+": data file "+file+": not a regular file ("+kinds[kind]+")") {
		t.Errorf("no log line names the file, its version and kind:\n%s", log)
	}
	if err := m.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited, err := m.Wait(15 * time.Second)
	if !exited || err != nil {
		t.Fatalf("after SIGTERM: exited %v, %v; want exit 0 within 15s\n%s", exited, err, m.Log())
	}
	if mounttest.Mounted(m.Dir) {
		t.Error("still mounted after SIGTERM")
	}
}
