package gds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Shard is a deltafs shard directory (MOUNT/version/N/shard/K) with its
// extent manifest loaded: where each of its samples lies in deltafs's disk
// cache. Opening it reads MOUNT/.../shard/K/_extents.tsv, which makes the
// mount write every sample of the shard to the disk cache that is not there
// yet. Not safe for concurrent use with Refresh.
type Shard struct {
	dir     string
	entries []ManifestEntry
	index   map[string]int // sample path -> entries index
}

// OpenShard reads the extent manifest of the shard directory dir (which
// materialises the shard in the mount's disk cache).
func OpenShard(dir string) (*Shard, error) {
	s := &Shard{dir: dir}
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh reads the manifest again, which writes samples evicted from the
// disk cache since the last read back into it (at the same places).
func (s *Shard) Refresh() error {
	entries, err := ReadManifestFile(filepath.Join(s.dir, ManifestName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gds: %s has no %s: not a deltafs shard directory, or the mount has no disk cache (--cache-dir none): %w", s.dir, ManifestName, err)
		}
		return fmt.Errorf("gds: shard %s: %w", s.dir, err)
	}
	index := make(map[string]int, len(entries))
	for i, e := range entries {
		index[e.Sample] = i
	}
	s.entries, s.index = entries, index
	return nil
}

// Dir is the shard directory.
func (s *Shard) Dir() string { return s.dir }

// Samples lists the shard's samples (paths relative to Dir) in manifest
// order, which is the shard's order.
func (s *Shard) Samples() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.Sample
	}
	return out
}

// Extents returns the extents of samples (paths relative to Dir; nil: every
// sample in manifest order). An unknown sample is an error naming it.
func (s *Shard) Extents(samples []string) ([]Extent, error) {
	if samples == nil {
		return Extents(s.entries), nil
	}
	out := make([]Extent, len(samples))
	for i, name := range samples {
		j, ok := s.index[name]
		if !ok {
			return nil, fmt.Errorf("gds: shard %s has no sample %q", s.dir, name)
		}
		out[i] = s.entries[j].Extent
	}
	return out, nil
}

// evicted reports whether a read failed because a cache file is gone or
// shorter than the extent: the entry was evicted since the extents were
// taken.
func evicted(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ReadSamples reads samples of a shard (paths relative to its directory;
// nil: all of them, in manifest order) into dst, sample i at the returned
// Offsets[i] (BatchLayout of their extents gives the size dst needs), by
// ReadBatch. When a cache file turns out evicted since the manifest was
// read, it reads the manifest again, which re-materialises the shard, and
// retries once; a shard that does not fit in the disk budget can still
// fail then, with an error saying so.
func (r *Reader) ReadSamples(ctx context.Context, s *Shard, samples []string, dst DeviceBuffer) (BatchResult, error) {
	exts, err := s.Extents(samples)
	if err != nil {
		return BatchResult{}, err
	}
	res, err := r.ReadBatch(ctx, exts, dst)
	if err == nil || !evicted(err) {
		return res, wrapShard(s, err)
	}
	if err := s.Refresh(); err != nil {
		return res, err
	}
	if exts, err = s.Extents(samples); err != nil {
		return res, err
	}
	res, err = r.ReadBatch(ctx, exts, dst)
	if err != nil && evicted(err) {
		return res, fmt.Errorf("gds: shard %s: samples evicted again right after re-materialising them: is the shard larger than the disk cache budget? %w", s.dir, err)
	}
	return res, wrapShard(s, err)
}

func wrapShard(s *Shard, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gds: shard %s: %w", s.dir, err)
}

// SampleExtent returns where the bytes of the sample file at path (inside a
// deltafs mount) lie in the disk cache, materialising it: from its extended
// attribute XattrName when the mount serves it (--xattrs), else from the
// manifest of its shard directory (its parent, or its grandparent for a
// sample in a class folder), which materialises the whole shard.
func SampleExtent(path string) (Extent, error) {
	e, err := xattrExtent(path)
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, errNoXattr) {
		return Extent{}, fmt.Errorf("gds: %s: %w", path, err)
	}
	rel := filepath.Base(path)
	for dir := filepath.Dir(path); ; {
		if _, serr := os.Stat(filepath.Join(dir, ManifestName)); serr == nil {
			s, err := OpenShard(dir)
			if err != nil {
				return Extent{}, err
			}
			x, err := s.Extents([]string{rel})
			if err != nil {
				return Extent{}, err
			}
			return x[0], nil
		}
		if strings.Contains(rel, "/") || dir == filepath.Dir(dir) {
			return Extent{}, fmt.Errorf("gds: %s: no extent: the mount serves no %s attribute (mount with --xattrs) and no %s was found in its shard directory", path, XattrName, ManifestName)
		}
		rel = filepath.Base(dir) + "/" + rel
		dir = filepath.Dir(dir)
	}
}

// errNoXattr: the file has no extent attribute (the mount has no --xattrs,
// or the filesystem has no xattrs).
var errNoXattr = errors.New("no extent attribute")

func xattrExtent(path string) (Extent, error) {
	v, err := getxattr(path, XattrName)
	if err != nil {
		return Extent{}, err
	}
	var e Extent
	if err := e.UnmarshalText(v); err != nil {
		return Extent{}, fmt.Errorf("attribute %s: %w", XattrName, err)
	}
	return e, nil
}

// ReadSample reads the sample file at path (inside a deltafs mount) into
// the start of dst through its extent (see SampleExtent). An extent evicted
// before the read is looked up again, which re-materialises it, once.
func (r *Reader) ReadSample(ctx context.Context, path string, dst DeviceBuffer) (Result, error) {
	var res Result
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var e Extent
		if e, err = SampleExtent(path); err != nil {
			return Result{}, err
		}
		if res, err = r.ReadExtent(ctx, e, dst); err == nil || !evicted(err) {
			break
		}
	}
	if err != nil {
		return res, fmt.Errorf("gds: sample %s: %w", path, err)
	}
	return res, nil
}
