package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

func newLocal(t *testing.T) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// specialFiles makes one entry of every kind Local refuses under dir and
// returns key -> the kind its errors must name.
func specialFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	mk := func(key string) string {
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := syscall.Mkfifo(mk("_delta_log/00000000000000000001.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(mk("fifo-target"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "fifo-target"), mk("link-to-fifo.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", mk("zero.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", mk("null.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(testkit.Socket(t), mk("sock.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mk("dir.parquet"), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"_delta_log/00000000000000000001.json": "named pipe",
		"link-to-fifo.parquet":                 "named pipe",
		"zero.parquet":                         "character device",
		"null.parquet":                         "character device",
		"sock.parquet":                         "socket",
		"dir.parquet":                          "directory",
	}
}

func TestLocalRefusesSpecialFiles(t *testing.T) {
	l, dir := newLocal(t)
	ctx := context.Background()
	for key, kind := range specialFiles(t, dir) {
		want := key + ": not a regular file (" + kind + ")"
		check := func(op string, err error) {
			t.Helper()
			if err == nil || err.Error() != want || !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s(%s) = %v, want %q matching ErrNotRegular", op, key, err, want)
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != kind {
				t.Errorf("%s(%s): no *NotRegularError of kind %q in %v", op, key, kind, err)
			}
		}
		testkit.Bounded(t, "reading "+key, 10*time.Second, func() {
			_, err := l.Stat(ctx, key)
			check("Stat", err)
			for _, n := range []int{0, 1, 4096} {
				got, err := l.ReadAt(ctx, key, make([]byte, n), 0)
				check("ReadAt", err)
				if got != 0 {
					t.Errorf("ReadAt(%s, %d bytes) read %d bytes", key, n, got)
				}
			}
			_, err = ReadAll(ctx, l, key)
			check("ReadAll", err)
			// A 0-byte read (the size a listing gives a named pipe)
			// is no empty object.
			_, err = ReadRange(ctx, l, key, 0, 0)
			check("ReadRange(0, 0)", err)
		})
	}
}

// TestLocalListsSpecialFiles: nothing disappears from a listing; links
// are described by their targets; directories (also linked ones) are not
// objects.
func TestLocalListsSpecialFiles(t *testing.T) {
	l, dir := newLocal(t)
	specialFiles(t, dir)
	data := bytes.Repeat([]byte("x"), 1234)
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("part-0.parquet", filepath.Join(dir, "link.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir.parquet", filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling.parquet")); err != nil {
		t.Fatal(err)
	}
	var infos []ObjectInfo
	testkit.Bounded(t, "List", 10*time.Second, func() {
		var err error
		if infos, err = l.List(context.Background(), "", ""); err != nil {
			t.Error(err)
		}
	})
	var keys []string
	sizes := map[string]int64{}
	for _, oi := range infos {
		keys = append(keys, oi.Key)
		sizes[oi.Key] = oi.Size
	}
	want := []string{
		"_delta_log/00000000000000000001.json", "dangling.parquet", "fifo-target", "link-to-fifo.parquet",
		"link.parquet", "null.parquet", "part-0.parquet", "sock.parquet", "zero.parquet",
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("List = %q, want %q", keys, want)
	}
	if sizes["link.parquet"] != 1234 {
		t.Errorf("a link to a 1234-byte file lists with size %d", sizes["link.parquet"])
	}
	if _, err := ReadAll(context.Background(), l, "dangling.parquet"); !errors.Is(err, ErrNotExist) {
		t.Errorf("ReadAll(dangling link) = %v, want ErrNotExist", err)
	}
	if got, err := ReadAll(context.Background(), l, "link.parquet"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadAll(link) = %d bytes, %v", len(got), err)
	}
}

// TestLocalReadBoundedBySizeAtOpen: a read never goes past the size the
// file had when opened, and a file that changes while read fails with
// ErrChanged instead of giving a mix.
func TestLocalReadBoundedBySizeAtOpen(t *testing.T) {
	_, dir := newLocal(t)
	path := filepath.Join(dir, "f")
	orig := bytes.Repeat([]byte("a"), 1000)
	write := func() {
		t.Helper()
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		// An old time, so that a change now is seen whatever the
		// filesystem's timestamp granularity.
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *localFile {
		t.Helper()
		write()
		f, err := openRegular(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	ctx := context.Background()

	f := open()
	p := make([]byte, 600)
	if n, err := f.readAt(ctx, nil, p, 500); n != 500 || err != io.EOF {
		t.Errorf("read across the end = %d, %v; want 500, io.EOF", n, err)
	}

	f = open()
	if err := os.WriteFile(path, append(bytes.Repeat([]byte("b"), 1000), "more"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := f.readAt(ctx, nil, make([]byte, 2000), 0); !errors.Is(err, ErrChanged) {
		t.Errorf("read of a file rewritten (and grown) since open = %d, %v; want ErrChanged", n, err)
	}

	f = open()
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	if n, err := f.readAt(ctx, nil, make([]byte, 1000), 0); !errors.Is(err, ErrChanged) {
		t.Errorf("read of a file shrunk since open = %d, %v; want ErrChanged", n, err)
	}

	f = open()
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt([]byte("zzz"), 10) // same size, new content
	fh.Close()
	if n, err := f.readAt(ctx, nil, make([]byte, 1000), 0); !errors.Is(err, ErrChanged) {
		t.Errorf("read of a file rewritten in place since open = %d, %v; want ErrChanged", n, err)
	}
}

func TestLocalContextAndClose(t *testing.T) {
	l, dir := newLocal(t)
	if err := os.WriteFile(filepath.Join(dir, "k"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.ReadAt(ctx, "k", make([]byte, 4), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAt with a done context = %v", err)
	}
	if _, err := l.Stat(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a done context = %v", err)
	}
	if _, err := l.List(ctx, "", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a done context = %v", err)
	}
	if err := l.Put(ctx, "new", []byte("x"), false); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a done context = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a canceled Put stored the object: %v", err)
	}
	if _, err := ReadLocalFile(ctx, filepath.Join(dir, "k"), 10); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadLocalFile with a done context = %v", err)
	}

	bg := context.Background()
	if b, err := ReadAll(bg, l, "k"); err != nil || string(b) != "data" {
		t.Fatalf("ReadAll before Close = %q, %v", b, err)
	}
	l.Close()
	if _, err := l.ReadAt(bg, "k", make([]byte, 4), 0); err == nil || err.Error() != "k: storage closed (deltafs is shutting down)" {
		t.Errorf("ReadAt after Close = %v", err)
	}
	if err := l.Put(bg, "new", []byte("x"), true); err == nil {
		t.Error("Put after Close succeeded")
	}
}

func TestReadLocalFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	p := filepath.Join(dir, "img.png")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadLocalFile(ctx, p, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadLocalFile = %q, %v", b, err)
	}
	if _, err := ReadLocalFile(ctx, p, 9); !errors.Is(err, ErrTooLarge) || err.Error() != "file too large: 10 bytes, over the bound of 9" {
		t.Errorf("ReadLocalFile over the bound = %v", err)
	}
	// A sparse file of 1 TiB is refused by its size, not read.
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil {
		t.Fatal(err)
	}
	testkit.Bounded(t, "ReadLocalFile of a 1 TiB sparse file", 10*time.Second, func() {
		if _, err := ReadLocalFile(ctx, big, 1<<30); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadLocalFile of 1 TiB = %v, want ErrTooLarge", err)
		}
	})
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.png")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	testkit.Bounded(t, "ReadLocalFile of special files", 10*time.Second, func() {
		if _, err := ReadLocalFile(ctx, fifo, 1<<30); err == nil || err.Error() != "not a regular file (named pipe)" {
			t.Errorf("ReadLocalFile(fifo) = %v", err)
		}
		if _, err := ReadLocalFile(ctx, zero, 1<<30); err == nil || err.Error() != "not a regular file (character device)" {
			t.Errorf("ReadLocalFile(link to /dev/zero) = %v", err)
		}
		if f, err := OpenLocalFile(fifo); err == nil || !errors.Is(err, ErrNotRegular) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenLocalFile(fifo) = %v", err)
		}
		if _, err := StatLocalFile(zero); !errors.Is(err, ErrNotRegular) {
			t.Errorf("StatLocalFile(link to /dev/zero) = %v", err)
		}
	})
}

// TestLocalPutModes: objects and directories get 0666 and 0777 less the
// umask, as any tool creates them (they used to be 0600, unreadable by
// teammates). The umask is process-wide: no test here runs in parallel.
func TestLocalPutModes(t *testing.T) {
	for _, c := range []struct {
		umask          int
		file, dir      fs.FileMode
		fileIf, dirTop fs.FileMode
	}{
		{0o022, 0o644, 0o755, 0o644, 0o755},
		{0o002, 0o664, 0o775, 0o664, 0o775},
		{0o077, 0o600, 0o700, 0o600, 0o700},
	} {
		old := syscall.Umask(c.umask)
		root := filepath.Join(t.TempDir(), "table")
		l, err := NewLocal(root)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := l.Put(ctx, "_delta_log/00000000000000000000.json", []byte("{}"), true); err != nil {
			t.Fatal(err)
		}
		if err := l.Put(ctx, "a/b/part-0.parquet", []byte("x"), false); err != nil {
			t.Fatal(err)
		}
		syscall.Umask(old)
		for path, want := range map[string]fs.FileMode{
			"":                                     fs.ModeDir | c.dirTop,
			"_delta_log":                           fs.ModeDir | c.dir,
			"_delta_log/00000000000000000000.json": c.fileIf,
			"a":                                    fs.ModeDir | c.dir,
			"a/b":                                  fs.ModeDir | c.dir,
			"a/b/part-0.parquet":                   c.file,
		} {
			fi, err := os.Stat(filepath.Join(root, path))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != want {
				t.Errorf("umask %03o: %q has mode %v, want %v", c.umask, path, fi.Mode(), want)
			}
		}
		// No temporary file is left.
		infos, err := l.List(ctx, "", "")
		if err != nil || len(infos) != 2 {
			t.Errorf("umask %03o: List = %v, %v; want the 2 objects", c.umask, infos, err)
		}
	}
}

// A data file is kept open between reads (fdCache); a file deleted or
// replaced since must not go on being served from the old descriptor as if
// it were still in the table.
func TestLocalKeptFileDeletedOrReplaced(t *testing.T) {
	l, dir := newLocal(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), []byte("first contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := l.ReadAt(ctx, "part-0.parquet", buf, 0); err != nil || string(buf) != "first" {
		t.Fatalf("first read: %q %v", buf, err)
	}
	if err := os.Remove(filepath.Join(dir, "part-0.parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadAt(ctx, "part-0.parquet", buf, 0); !errors.Is(err, ErrNotExist) {
		t.Fatalf("read after delete: %v, want ErrNotExist", err)
	}
	// Replaced by a rename over it: the next read sees the new file.
	if err := os.WriteFile(filepath.Join(dir, "part-1.parquet"), []byte("older contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadAt(ctx, "part-1.parquet", buf, 0); err != nil || string(buf) != "older" {
		t.Fatalf("read: %q %v", buf, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tmp"), []byte("newer contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "part-1.parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadAt(ctx, "part-1.parquet", buf, 0); err != nil || string(buf) != "newer" {
		t.Fatalf("read after the replacement: %q %v, want the new file", buf, err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting descriptors: %v", err)
	}
	return len(ents)
}

// The kept data files are bounded (fdCacheSize, least recently used
// closed first) while many readers read many files at once, each read
// returns its own file's bytes (a descriptor evicted while read is closed
// by its last reader, not under it), and Close closes them all.
func TestLocalKeptFilesBounded(t *testing.T) {
	l, dir := newLocal(t)
	const files = 3 * fdCacheSize
	for i := range files {
		name := filepath.Join(dir, "part-"+strconv.Itoa(i)+".parquet")
		if err := os.WriteFile(name, []byte("contents of file "+strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := openFDs(t)
	testkit.Bounded(t, "concurrent reads", 10*time.Second, func() {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for round := range 3 {
					for i := range files {
						k := (i*7 + g*31 + round) % files
						want := "contents of file " + strconv.Itoa(k)
						buf := make([]byte, len(want))
						if _, err := l.ReadAt(context.Background(), "part-"+strconv.Itoa(k)+".parquet", buf, 0); err != nil || string(buf) != want {
							t.Errorf("file %d: %q, %v; want %q", k, buf, err, want)
							return
						}
					}
				}
			})
		}
		wg.Wait()
	})
	if n := openFDs(t) - before; n > fdCacheSize || n < fdCacheSize/2 {
		t.Errorf("%d more descriptors open after reading %d files, want about %d (the bound)", n, files, fdCacheSize)
	}
	l.Close()
	if n := openFDs(t) - before; n > 0 {
		t.Errorf("%d more descriptors open after Close, want 0", n)
	}
}
