package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// onePNG is a valid 1x1 grey PNG.
var onePNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x7e, 0x9b,
	0x55, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x01, 0x48, 0xaf, 0xa4, 0x71, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

// imageTree writes an ImageFolder tree of n images per class.
func imageTree(t *testing.T, classes []string, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	for _, c := range classes {
		if err := os.MkdirAll(filepath.Join(src, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(src, c, fmt.Sprintf("%03d.png", i)), onePNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return src
}

// noTable fails the test when dir holds a Delta log.
func noTable(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "_delta_log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s has a _delta_log (%v): the failed import committed", dir, err)
	}
}

// TestImportSpecialFiles: a named pipe, a socket or a device (directly or
// through a link) in the source, or an image over --max-file-size, fails
// the import with one line naming it, at once, before anything is written.
func TestImportSpecialFiles(t *testing.T) {
	const limit = 30 * time.Second
	cases := []struct {
		name string
		make func(t *testing.T, src string) (arg, want string)
		args []string
	}{
		{"fifo image", func(t *testing.T, src string) (string, string) {
			if err := syscall.Mkfifo(filepath.Join(src, "cat", "evil.png"), 0o644); err != nil {
				t.Fatal(err)
			}
			return src, "source " + src + ": cat/evil.png: not a regular file (named pipe)"
		}, nil},
		{"link to /dev/zero", func(t *testing.T, src string) (string, string) {
			if err := os.Symlink("/dev/zero", filepath.Join(src, "dog", "zero.jpg")); err != nil {
				t.Fatal(err)
			}
			return src, "source " + src + ": dog/zero.jpg: not a regular file (character device)"
		}, nil},
		{"socket", func(t *testing.T, src string) (string, string) {
			if err := os.Rename(testkit.Socket(t), filepath.Join(src, "cat", "sock.png")); err != nil {
				t.Fatal(err)
			}
			return src, "source " + src + ": cat/sock.png: not a regular file (socket)"
		}, nil},
		{"sparse 2 GiB image", func(t *testing.T, src string) (string, string) {
			p := filepath.Join(src, "cat", "huge.png")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 2<<30); err != nil {
				t.Fatal(err)
			}
			return src, "source " + src + ": cat/huge.png: file too large: 2147483648 bytes, over the bound of 1073741824 (--max-file-size)"
		}, nil},
		{"image over --max-file-size", func(t *testing.T, src string) (string, string) {
			return src, "source " + src + ": cat/000.png: file too large: 67 bytes, over the bound of 66 (--max-file-size)"
		}, []string{"--max-file-size", "66"}},
		{"fifo as SRC", func(t *testing.T, src string) (string, string) {
			p := filepath.Join(t.TempDir(), "data.npy")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p, "source " + p + ": not a regular file (named pipe) (want an ImageFolder directory or a .npy / .npy.gz file)"
		}, nil},
		{"link to /dev/zero as SRC", func(t *testing.T, src string) (string, string) {
			p := filepath.Join(t.TempDir(), "zero.npy.gz")
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return p, "source " + p + ": not a regular file (character device) (want an ImageFolder directory or a .npy / .npy.gz file)"
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := imageTree(t, []string{"cat", "dog"}, 3)
			arg, want := c.make(t, src)
			table := filepath.Join(t.TempDir(), "table")
			stdout, stderr, code := runBounded(t, limit, append([]string{"import", arg, table}, c.args...)...)
			if code != 1 || stderr != "deltafs: "+want+"\n" || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, want)
			}
			if _, err := os.Stat(table); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the refused import created %s (%v)", table, err)
			}
		})
	}
	t.Run("special files that are not images", func(t *testing.T) {
		// Never opened, as torchvision ignores them.
		src := imageTree(t, []string{"cat"}, 2)
		if err := syscall.Mkfifo(filepath.Join(src, "cat", "README"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(src, "cat", "zero.txt")); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runBounded(t, limit, "import", src, filepath.Join(t.TempDir(), "table"))
		if code != 0 || !strings.HasPrefix(stdout, "version 0: created the table with 2 rows") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}

// sparseNpy writes a .npy of n records of 784 zero bytes each, sparse: a
// source that takes minutes to import.
func sparseNpy(t *testing.T, n int64) string {
	t.Helper()
	hdr := testkit.NPYHeader(fmt.Sprintf("{'descr': [('pixels', '|u1', (784,))], 'fortran_order': False, 'shape': (%d,), }", n))
	p := filepath.Join(t.TempDir(), "big.npy")
	if err := os.WriteFile(p, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(hdr))+n*784); err != nil {
		t.Fatal(err)
	}
	return p
}

// interruptImport starts `deltafs import src table args...`, waits until it
// has stored a data file (or its listing took ready), sends sig, and
// returns the exit status, stderr and the time from the signal to the
// exit.
func interruptImport(t *testing.T, sig syscall.Signal, ready func() bool, src, table string, args ...string) (code int, stderr string, took time.Duration) {
	t.Helper()
	cmd := exec.Command(mounttest.Binary(t), append([]string{"import", src, table}, args...)...)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case err := <-exited:
			t.Fatalf("the import ended before the signal: %v\n%s", err, e.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the import wrote nothing in 60s")
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-exited:
		took = time.Since(start)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the import still ran 20s after %v\n%s", sig, e.String())
	}
	return code, e.String(), took
}

// dataFiles lists the data files at the table root.
func dataFiles(t *testing.T, table string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(table, "part-*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// TestImportSignals: SIGTERM or SIGINT stops an import promptly: no
// commit, one line saying so and naming the data files left behind.
func TestImportSignals(t *testing.T) {
	names := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run("npy "+names[sig], func(t *testing.T) {
			src := sparseNpy(t, 20_000_000) // 15 GB of zeros
			table := filepath.Join(t.TempDir(), "table")
			code, stderr, took := interruptImport(t, sig, func() bool { return len(dataFiles(t, table)) >= 2 }, src, table, "--rows-per-file", "5000")
			files := dataFiles(t, table)
			want := regexp.MustCompile(`^deltafs: import ` + regexp.QuoteMeta(src) + ` into ` + regexp.QuoteMeta(table) + `: interrupted by ` + names[sig] +
				`: nothing was committed; (\d+) data files written before that are in no version \(VACUUM removes them\): (part-\S+\.parquet(, )?)+( and \d+ more)?\n$`)
			sub := want.FindStringSubmatch(stderr)
			if code != 1 || sub == nil || sub[1] != fmt.Sprint(len(files)) {
				t.Fatalf("exit %d after %s, stderr %q; want 1 and a line matching %s naming the %d data files", code, took, stderr, want, len(files))
			}
			for _, f := range files[:min(len(files), maxOrphansNamed)] {
				if !strings.Contains(stderr, f) {
					t.Errorf("the message does not name %s", f)
				}
			}
			noTable(t, table)
			t.Logf("exited %s after %s", took, names[sig])
		})
	}
	t.Run("ImageFolder SIGTERM", func(t *testing.T) {
		// A tree of large (sparse) images: a slow source read by
		// ImageFolder, within --max-file-size.
		src := imageTree(t, []string{"a", "b"}, 1)
		for i := range 200 {
			p := filepath.Join(src, "a", fmt.Sprintf("big%03d.png", i))
			if err := os.WriteFile(p, onePNG, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 48<<20); err != nil {
				t.Fatal(err)
			}
		}
		table := filepath.Join(t.TempDir(), "table")
		code, stderr, took := interruptImport(t, syscall.SIGTERM, func() bool { return len(dataFiles(t, table)) >= 1 }, src, table, "--rows-per-file", "2")
		if code != 1 || !strings.HasPrefix(stderr, "deltafs: import "+src+" into "+table+": interrupted by SIGTERM: nothing was committed; ") || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("exit %d after %s, stderr %q", code, took, stderr)
		}
		noTable(t, table)
	})
	t.Run("source read stuck in the kernel", func(t *testing.T) {
		// An image on a filesystem that stopped answering: no context
		// reaches the read, the exit bound does.
		tree := imageTree(t, []string{"a", "b"}, 2)
		src, stuck := hungDir(t, tree, "001.png")
		table := filepath.Join(t.TempDir(), "table")
		code, stderr, took := interruptImport(t, syscall.SIGTERM, func() bool {
			select {
			case <-stuck:
				return true
			default:
				return false
			}
		}, src, table)
		want := "deltafs: still running 10s after SIGTERM (a read stuck in storage?): exiting without waiting for it\n"
		if code != 1 || stderr != want {
			t.Fatalf("exit %d after %s, stderr %q; want 1 and %q", code, took, stderr, want)
		}
		if took < 9*time.Second {
			t.Errorf("exited %s after the signal, before the 10s grace", took)
		}
		noTable(t, table)
	})
}

// TestImportUmask: the table's files and directories are created with the
// usual modes less the umask, so that a group can share a table.
func TestImportUmask(t *testing.T) {
	bin := mounttest.Binary(t)
	for _, c := range []struct {
		umask     string
		file, dir fs.FileMode
	}{
		{"022", 0o644, 0o755},
		{"002", 0o664, 0o775},
	} {
		t.Run(c.umask, func(t *testing.T) {
			src := imageTree(t, []string{"cat", "dog"}, 2)
			table := filepath.Join(t.TempDir(), "team", "table")
			out, err := exec.Command("sh", "-c", `umask "$1"; exec "$2" import "$3" "$4"`, "sh", c.umask, bin, src, table).CombinedOutput()
			if err != nil {
				t.Fatalf("import: %v\n%s", err, out)
			}
			n := 0
			err = filepath.WalkDir(filepath.Dir(table), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if p == filepath.Dir(table) {
					return nil // made by the test
				}
				want := c.file
				if d.IsDir() {
					want = c.dir | fs.ModeDir
				}
				if fi.Mode() != want {
					t.Errorf("umask %s: %s has mode %v, want %v", c.umask, p, fi.Mode(), want)
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != 4 { // table/, _delta_log/, the commit, the data file
				t.Errorf("%d entries checked, want 4", n)
			}
		})
	}
}
