package importer

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// TestImageFolderRefusesSpecialFiles: an image that is not a regular file
// fails Open, named, without being opened; other special files are not
// images and are ignored, as torchvision ignores them.
func TestImageFolderRefusesSpecialFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (named pipe)"},
		{"link to /dev/zero", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (character device)"},
		{"link to a fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p+".fifo", 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p+".fifo", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (named pipe)"},
		{"socket", func(t *testing.T, p string) {
			if err := os.Symlink(testkit.Socket(t), p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (socket)"},
		{"dangling link", func(t *testing.T, p string) {
			if err := os.Symlink("nowhere.png", p); err != nil {
				t.Fatal(err)
			}
		}, "no such file or directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "src")
			writePNG(t, filepath.Join(src, "cat", "1.png"), 1)
			writePNG(t, filepath.Join(src, "dog", "1.png"), 2)
			c.make(t, filepath.Join(src, "dog", "2.png"))
			testkit.Bounded(t, "Open", 10*time.Second, func() {
				_, err := Open(context.Background(), src, Options{})
				if want := "source " + src + ": dog/2.png: " + c.want; err == nil || err.Error() != want {
					t.Errorf("Open = %v, want %q", err, want)
				}
			})
		})
	}
	t.Run("not an image", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "src")
		writePNG(t, filepath.Join(src, "cat", "1.png"), 1)
		if err := syscall.Mkfifo(filepath.Join(src, "cat", "notes"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(src, "cat", "zero.txt")); err != nil {
			t.Fatal(err)
		}
		testkit.Bounded(t, "import", 10*time.Second, func() {
			res, err := importPath(t, src, filepath.Join(t.TempDir(), "table"), writer.Options{})
			if err != nil || res.Rows != 1 {
				t.Errorf("import of a tree with special non-image files = %+v, %v; want its 1 image", res, err)
			}
		})
	})
}

// TestSourceFileRefusesSpecialFiles: SRC itself as a named pipe or a link
// to a device is refused unopened.
func TestSourceFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.npy")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	testkit.Bounded(t, "Open", 10*time.Second, func() {
		for path, kind := range map[string]string{fifo: "named pipe", zero: "character device"} {
			_, err := Open(context.Background(), path, Options{})
			want := "source " + path + ": not a regular file (" + kind + ") (want an ImageFolder directory or a .npy / .npy.gz file)"
			if err == nil || err.Error() != want || !errors.Is(err, storage.ErrNotRegular) {
				t.Errorf("Open(%s) = %v, want %q", path, err, want)
			}
		}
	})
}

// TestImageFolderMaxFileSize: an image over the bound fails Open (before
// any image is read, so before any data file is written); a 1 TiB sparse
// image is refused by its size.
func TestImageFolderMaxFileSize(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	img := writePNG(t, filepath.Join(src, "cat", "1.png"), 1)
	big := filepath.Join(src, "cat", "2.png")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil {
		t.Fatal(err)
	}
	testkit.Bounded(t, "Open", 10*time.Second, func() {
		_, err := Open(context.Background(), src, Options{})
		want := "source " + src + ": cat/2.png: file too large: 1099511627776 bytes, over the bound of 1073741824"
		if err == nil || err.Error() != want || !errors.Is(err, storage.ErrTooLarge) {
			t.Errorf("Open = %v, want %q", err, want)
		}
	})
	if err := os.Truncate(big, int64(len(img))+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), src, Options{MaxFileSize: int64(len(img))}); !errors.Is(err, storage.ErrTooLarge) {
		t.Errorf("Open with MaxFileSize %d = %v, want ErrTooLarge", len(img), err)
	}
	if s, err := Open(context.Background(), src, Options{MaxFileSize: int64(len(img)) + 1}); err != nil {
		t.Errorf("Open with MaxFileSize at the largest image = %v", err)
	} else {
		s.Close()
	}
}

// TestImageFolderSwappedForFIFO: an image replaced by a named pipe after
// the listing fails its read, named, without blocking.
func TestImageFolderSwappedForFIFO(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	writePNG(t, filepath.Join(src, "cat", "1.png"), 1)
	s, err := OpenImageFolder(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(src, "cat", "1.png")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Bounded(t, "Next", 10*time.Second, func() {
		if _, err := s.Next(); err == nil || err.Error() != "cat/1.png: not a regular file (named pipe)" {
			t.Errorf("Next = %v", err)
		}
	})
}

// TestImageFolderContext: a done context stops the listing and the reads.
func TestImageFolderContext(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	writePNG(t, filepath.Join(src, "cat", "1.png"), 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenImageFolder(ctx, src, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenImageFolder with a done context = %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	s, err := OpenImageFolder(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		t.Errorf("Next with a done context = %v", err)
	}
}
