package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultDir is the usual Options.Dir: os.UserCacheDir()/deltafs
// ($XDG_CACHE_HOME/deltafs or ~/.cache/deltafs on Linux).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory: %w", err)
	}
	return filepath.Join(d, "deltafs"), nil
}

// meta is deltafs-cache-v1/meta.json. Only `deltafs cache stats` reads it,
// to show the budget the last process to open the cache used.
type meta struct {
	Format          int       `json:"format"`
	DiskBytes       int64     `json:"disk_bytes"`
	MinFreeFraction float64   `json:"min_free_fraction"`
	PID             int       `json:"pid"`
	Written         time.Time `json:"written"`
}

func writeMeta(root string, m meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, tempPrefix+strconv.Itoa(os.Getpid())+"."+fmt.Sprintf("%016x", rand.Uint64()))
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(root, metaName)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Usage describes a cache directory as found on disk.
type Usage struct {
	Root       string // Dir/deltafs-cache-v1
	Exists     bool
	Entries    int64 // entry files
	Bytes      int64 // their bytes (what counts against the budget)
	TempFiles  int64 // writes in progress, or left by dead writers
	TempBytes  int64
	OtherFiles int64 // files the cache does not own (never touched)
	// From meta.json: the budget of the last process that opened the cache
	// (zero if unknown).
	Budget          int64
	MinFreeFraction float64
	// The filesystem holding the cache (zero if unknown).
	FreeBytes, TotalBytes uint64
}

// DiskUsage reports what the cache under dir (an Options.Dir) holds. It
// reads only names and sizes, not entry contents, and changes nothing.
func DiskUsage(dir string) (Usage, error) {
	root, err := rootOf(dir)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Root: root}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		// Report the filesystem the cache would be created on.
		for p := filepath.Dir(root); ; p = filepath.Dir(p) {
			if avail, total, err := diskSpace(p); err == nil {
				u.FreeBytes, u.TotalBytes = avail, total
				break
			}
			if p == filepath.Dir(p) {
				break
			}
		}
		return u, nil
	} else if err != nil {
		return u, err
	}
	u.Exists = true
	if avail, total, err := diskSpace(root); err == nil {
		u.FreeBytes, u.TotalBytes = avail, total
	}
	if b, err := os.ReadFile(filepath.Join(root, metaName)); err == nil {
		var m meta
		if json.Unmarshal(b, &m) == nil {
			u.Budget, u.MinFreeFraction = m.DiskBytes, m.MinFreeFraction
		}
	}
	err = walkOwn(root, func(p string, kind fileKind, info fs.FileInfo) error {
		switch kind {
		case kindEntry:
			u.Entries++
			u.Bytes += info.Size()
		case kindTemp:
			u.TempFiles++
			u.TempBytes += info.Size()
		case kindOther:
			u.OtherFiles++
		}
		return nil
	})
	return u, err
}

// Clear removes the cache under dir (an Options.Dir): entry files, temp
// files, meta.json, then the shard directories and deltafs-cache-v1 itself
// if that leaves them empty. Nothing else is removed: a file the cache does
// not own stays, and so do the directories holding it. A process using the
// cache meanwhile sees misses, and refetches.
func Clear(dir string) error {
	root, err := rootOf(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var errs []error
	err = walkOwn(root, func(p string, kind fileKind, info fs.FileInfo) error {
		if kind == kindOther {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return nil
	})
	errs = append(errs, err)
	for i := 0; i < 256; i++ {
		os.Remove(filepath.Join(root, fmt.Sprintf("%02x", i))) // fails, harmlessly, unless empty
	}
	os.Remove(root)
	return errors.Join(errs...)
}

func rootOf(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("cache: no cache directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(abs, subdirName), nil
}

type fileKind int

const (
	kindEntry fileKind = iota
	kindTemp
	kindMeta
	kindOther
)

// walkOwn calls fn for every file in root and its shard directories,
// classified by name. It does not descend anywhere else.
func walkOwn(root string, fn func(p string, kind fileKind, info fs.FileInfo) error) error {
	des, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, de := range des {
		name := de.Name()
		p := filepath.Join(root, name)
		if de.IsDir() {
			if len(name) != 2 || !isHex(name) {
				continue // not ours: leave it alone
			}
			sub, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			for _, se := range sub {
				info, err := se.Info()
				if err != nil {
					continue
				}
				kind := kindOther
				switch {
				case se.Type().IsRegular() && isEntryName(se.Name()) && se.Name()[:2] == name:
					kind = kindEntry
				case se.Type().IsRegular() && isTempName(se.Name()):
					kind = kindTemp
				}
				if err := fn(filepath.Join(p, se.Name()), kind, info); err != nil {
					return err
				}
			}
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		kind := kindOther
		switch {
		case de.Type().IsRegular() && name == metaName:
			kind = kindMeta
		case de.Type().IsRegular() && isTempName(name):
			kind = kindTemp
		}
		if err := fn(p, kind, info); err != nil {
			return err
		}
	}
	return nil
}
