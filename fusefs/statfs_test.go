package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// mountDeltafs mounts tbl with fusefs.Mount, as `deltafs mount` does (not
// gofs.Mount: the statfs and fsync answers are fusefs.Mount's), and unmounts
// in t.Cleanup.
func mountDeltafs(t *testing.T, tbl *sampletest.Table, spec sample.Spec, refresh time.Duration) (string, *fusefs.Root) {
	t.Helper()
	mounttest.RequireFUSE(t)
	s, err := sample.New(tbl.Options(spec))
	if err != nil {
		t.Fatal(err)
	}
	root, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	dir := mounttest.InProcessWith(t, func(dir string) (*fuse.Server, error) {
		return fusefs.Mount(dir, root, root.MountOptions("memtable", false, false))
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the unmount (cleanups run last first)
	go root.Run(ctx)
	t.Cleanup(cancel) // before the unmount
	return dir, root
}

// TestStatfs: statfs on any path of the mount reports a full read-only
// filesystem the size of the latest version's data files (sampletest: 1000
// bytes plus one per row), with 4 KiB blocks, one inode per live row and
// NAME_MAX 255 — and follows latest when a commit arrives.
func TestStatfs(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: digits(30, 0)}, {Path: "b.parquet", Rows: digits(20, 100)}}, nil, nil)
	dir, _ := mountDeltafs(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, Shards: 2}, 100*time.Millisecond)

	want := func(bytes, rows uint64) unix.Statfs_t {
		return unix.Statfs_t{Bsize: 4096, Frsize: 4096, Namelen: 255, Blocks: (bytes + 4095) / 4096, Files: rows}
	}
	check := func(p string, w unix.Statfs_t) error {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return err
		}
		if st.Bsize != w.Bsize || st.Frsize != w.Frsize || st.Namelen != w.Namelen || st.Blocks != w.Blocks ||
			st.Files != w.Files || st.Bfree != 0 || st.Bavail != 0 || st.Ffree != 0 {
			return &statfsMismatch{p, st, w}
		}
		return nil
	}
	v0 := want(1030+1020, 50)
	for _, p := range []string{dir, filepath.Join(dir, ".deltafs", "stats"), filepath.Join(dir, "version", "0", "shard", "1"),
		filepath.Join(dir, "version", "0", "shard", "0", "0.png"), filepath.Join(dir, "version", "0", "_commit.json")} {
		if err := check(p, v0); err != nil {
			t.Error(err)
		}
	}

	// A new version: the figures follow latest.
	tbl.Commit(t0.Add(time.Hour), "WRITE", []sampletest.Add{{Path: "c.parquet", Rows: digits(5000, 200)}}, nil, nil)
	v1 := want(1030+1020+6000, 5050)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check(dir, v1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a commit: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type statfsMismatch struct {
	path      string
	got, want unix.Statfs_t
}

func (e *statfsMismatch) Error() string {
	return "statfs " + e.path + ": got " + statfsString(e.got) + ", want " + statfsString(e.want) + " with nothing free"
}

func statfsString(s unix.Statfs_t) string {
	return fmt.Sprintf("bsize=%d frsize=%d namelen=%d blocks=%d bfree=%d bavail=%d files=%d ffree=%d",
		s.Bsize, s.Frsize, s.Namelen, s.Blocks, s.Bfree, s.Bavail, s.Files, s.Ffree)
}

// TestFsyncAndDirectoryModes: fsync and fdatasync succeed on every kind of
// file and directory of the mount (nothing to sync on a read-only
// filesystem), every directory is 0555, and .deltafs/ carries the mount's
// start time, not 1970.
func TestFsyncAndDirectoryModes(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: digits(12, 0)}}, nil, nil)
	before := time.Now().Add(-time.Second)
	dir, _ := mountDeltafs(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"}, time.Second)
	after := time.Now().Add(time.Second)

	var files, dirs int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			dirs++
			if fi.Mode().Perm() != 0o555 {
				t.Errorf("%s: mode %v, want dr-xr-xr-x", p, fi.Mode())
			}
		} else {
			files++
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Fsync(int(f.Fd())); err != nil {
			t.Errorf("fsync %s: %v", p, err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			t.Errorf("fdatasync %s: %v", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// root, .deltafs, at, version, version/0, shard, shard/0, 11 classes.
	if dirs != 18 || files < 12+4 {
		t.Errorf("walked %d directories and %d files, want 18 and at least 16", dirs, files)
	}
	fi, err := os.Stat(filepath.Join(dir, ".deltafs"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != fs.ModeDir|0o555 || fi.ModTime().Before(before) || fi.ModTime().After(after) {
		t.Errorf(".deltafs: mode %v, time %v; want dr-xr-xr-x and the mount's start (%v .. %v)", fi.Mode(), fi.ModTime(), before, after)
	}
	// A write is still refused.
	if f, err := os.OpenFile(filepath.Join(dir, "version", "0", "_commit.json"), os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Error("opened a file for writing")
	} else if !errors.Is(err, syscall.EROFS) {
		t.Errorf("open for writing: %v, want EROFS", err)
	}
}
