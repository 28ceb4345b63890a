package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Local is a table on a local (or locally mounted) filesystem.
type Local struct {
	root      string // absolute, cleaned
	closed    chan struct{}
	closeOnce sync.Once
	fds       fdCache // open data files
}

var (
	_ Storage   = (*Local)(nil)
	_ io.Closer = (*Local)(nil)
)

// errClosed is the cause of every call after Close.
var errClosed = errors.New("storage closed (deltafs is shutting down)")

// NewLocal opens the table directory root. It does not require the directory
// to exist, so that import can create a new table.
func NewLocal(root string) (*Local, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("table path %q: %w", root, err)
	}
	return &Local{root: abs, closed: make(chan struct{})}, nil
}

// Close ends the store: reads in flight stop at their next chunk and every
// later call fails at once. A mount closes its storage as it unmounts, so
// that requests still reading do not hold the unmount.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.fds.closeAll()
	})
	return nil
}

// check fails when ctx is done or the store closed.
func (l *Local) check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	select {
	case <-l.closed:
		return fmt.Errorf("%s: %w", key, errClosed)
	default:
		return nil
	}
}

// Root is the absolute directory of the table.
func (l *Local) Root() string { return l.root }

// Location implements Storage.
func (l *Local) Location() string { return l.root }

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// List implements Storage. It walks the directory that holds prefix and
// lists every entry that is not a directory (see "Local tables" in the
// package doc).
func (l *Local) List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	dir := prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir = prefix[:i]
	} else {
		dir = ""
	}
	var out []ObjectInfo
	walkRoot := l.path(dir)
	err := filepath.WalkDir(walkRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == walkRoot && errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", prefix, ErrNotExist)
			}
			return err
		}
		if err := l.check(ctx, prefix); err != nil {
			return err
		}
		rel, _ := filepath.Rel(l.root, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			// Prune directories that cannot hold a key under prefix.
			if p != walkRoot && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(key, prefix) || key <= startAfter {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while listing
			}
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// Describe the target, which is what a read gets. A link to a
			// directory is a directory (not walked, so no loops); a
			// dangling link is listed and fails when read.
			if target, err := os.Stat(p); err == nil {
				if target.IsDir() {
					return nil
				}
				info = target
			}
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Stat implements Storage. It follows symbolic links and refuses anything
// but a regular file (ErrNotRegular), without opening it.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := l.check(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := statRegular(l.path(key))
	if err != nil {
		return ObjectInfo{}, wrapOS(key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()}, nil
}

// ReadAt implements Storage. The open never blocks, anything but a regular
// file is refused (ErrNotRegular), and the read is bounded by the size the
// file had when opened (ErrChanged when it shrinks or changes meanwhile).
func (l *Local) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := l.check(ctx, key); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", key, off)
	}
	open := func() (*localFile, error) { return openRegular(l.path(key)) }
	if strings.HasPrefix(key, "_delta_log/") {
		f, err := open()
		if err != nil {
			return 0, wrapOS(key, err)
		}
		defer f.Close()
		return l.read(ctx, key, f, p, off)
	}
	for try := 0; ; try++ {
		e, err := l.fds.get(key, open)
		if err != nil {
			return 0, wrapOS(key, err)
		}
		n, err := l.read(ctx, key, e.lf, p, off)
		l.fds.put(e, err != nil && !errors.Is(err, io.EOF))
		if errors.Is(err, errUnlinked) && try == 0 {
			// The kept file left the table since it was opened: what the
			// path names now decides (nothing, or a new file).
			continue
		}
		return n, err
	}
}

func (l *Local) read(ctx context.Context, key string, f *localFile, p []byte, off int64) (int, error) {
	n, err := f.readAt(ctx, l.closed, p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%s: %w", key, err)
	}
	return n, err
}

// Put implements Storage. Writes go to a temporary file that is then linked
// (ifAbsent: link(2) fails if the target exists) or renamed into place, so a
// reader never sees a partial object. Files get mode 0666 and directories
// 0777, less the umask.
func (l *Local) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	defer l.fds.forget(key) // the path names the new file from now on
	if err := l.check(ctx, key); err != nil {
		return err
	}
	dst := l.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return fmt.Errorf("%s: %w", key, unwrapPath(err))
	}
	tmp, err := createTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst)+"-")
	if err != nil {
		return fmt.Errorf("%s: %w", key, unwrapPath(err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", key, unwrapPath(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", key, unwrapPath(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", key, unwrapPath(err))
	}
	// The last moment to give up: after the link or rename the object is
	// there, and Put reports success whatever ctx says.
	if err := l.check(ctx, key); err != nil {
		return err
	}
	if ifAbsent {
		if err := os.Link(tmp.Name(), dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", key, ErrExist)
			}
			return fmt.Errorf("%s: %w", key, unwrapLink(err))
		}
		return nil
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("%s: %w", key, unwrapLink(err))
	}
	return nil
}

// createTemp is os.CreateTemp with mode 0666 (less the umask) instead of
// 0600: the temporary file becomes the object, and teammates sharing a
// table must be able to read what an import wrote.
func createTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// unwrapLink drops the *os.LinkError around a link or rename error.
func unwrapLink(err error) error {
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

func wrapOS(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return fmt.Errorf("%s: %w", key, err)
}
