package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Local is a table on a local (or locally mounted) filesystem.
type Local struct {
	root string // absolute, cleaned
}

var _ Storage = (*Local)(nil)

// NewLocal opens the table directory root. It does not require the directory
// to exist, so that import can create a new table.
func NewLocal(root string) (*Local, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("table path %q: %w", root, err)
	}
	return &Local{root: abs}, nil
}

// Root is the absolute directory of the table.
func (l *Local) Root() string { return l.root }

// Location implements Storage.
func (l *Local) Location() string { return l.root }

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// List implements Storage. It walks the directory that holds prefix.
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
		if err := ctx.Err(); err != nil {
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
		out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Stat implements Storage.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	info, err := os.Stat(l.path(key))
	if err != nil {
		return ObjectInfo{}, wrapOS(key, err)
	}
	if info.IsDir() {
		return ObjectInfo{}, fmt.Errorf("%s: is a directory: %w", key, ErrNotExist)
	}
	return ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()}, nil
}

// ReadAt implements Storage.
func (l *Local) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	f, err := os.Open(l.path(key))
	if err != nil {
		return 0, wrapOS(key, err)
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%s: %w", key, err)
	}
	return n, err
}

// Put implements Storage. Writes go to a temporary file that is then linked
// (ifAbsent: link(2) fails if the target exists) or renamed into place, so a
// reader never sees a partial object.
func (l *Local) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	dst := l.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst)+"-*")
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if ifAbsent {
		if err := os.Link(tmp.Name(), dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", key, ErrExist)
			}
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func wrapOS(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return fmt.Errorf("%s: %w", key, err)
}
