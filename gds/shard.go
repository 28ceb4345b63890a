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
// retries once. Samples whose entries are still missing then (a shard
// larger than the disk budget, a sample deltafs could not cache) are read
// through the mount, from their sample files, by host memory; they are
// counted in the returned ShardResult.FromMount.
func (r *Reader) ReadSamples(ctx context.Context, s *Shard, samples []string, dst DeviceBuffer) (ShardResult, error) {
	exts, err := s.Extents(samples)
	if err != nil {
		return ShardResult{}, err
	}
	res, err := r.ReadBatch(ctx, exts, dst)
	if err == nil || !evicted(err) {
		return ShardResult{BatchResult: res}, wrapShard(s, err)
	}
	if err := s.Refresh(); err != nil {
		return ShardResult{BatchResult: res}, err
	}
	if exts, err = s.Extents(samples); err != nil {
		return ShardResult{BatchResult: res}, err
	}
	res, err = r.ReadBatch(ctx, exts, dst)
	if err == nil || !evicted(err) {
		return ShardResult{BatchResult: res}, wrapShard(s, err)
	}
	names := samples
	if names == nil {
		names = s.Samples()
	}
	out, err := r.readOrFallBack(ctx, s, names, exts, dst)
	return out, wrapShard(s, err)
}

// ShardResult reports a ReadSamples.
type ShardResult struct {
	BatchResult
	// FromMount counts the samples read from their sample files in the
	// mount because their cache entries were missing.
	FromMount int
}

// readOrFallBack reads each extent into its place in dst, and a sample
// whose cache file is missing or short from its sample file instead.
func (r *Reader) readOrFallBack(ctx context.Context, s *Shard, names []string, exts []Extent, dst DeviceBuffer) (ShardResult, error) {
	if err := r.acquire(); err != nil {
		return ShardResult{}, err
	}
	defer r.mu.RUnlock()
	offsets, size := r.BatchLayout(exts)
	out := ShardResult{BatchResult: BatchResult{Offsets: offsets, Size: size, Results: make([]Result, len(exts))}}
	if size > dst.Len() {
		return out, fmt.Errorf("gds: batch of %d extents needs %d bytes, destination has %d", len(exts), size, dst.Len())
	}
	fs, err := r.newFileSet(dst)
	if err != nil {
		return out, err
	}
	defer fs.close()
	pad := r.opts.BatchAlign%Alignment == 0
	for i, e := range exts {
		rr, err := r.readOne(ctx, fs, e, dst, offsets[i], pad)
		if err != nil && evicted(err) {
			out.FromMount++
			rr, err = r.readFile(ctx, filepath.Join(s.dir, names[i]), e.Length, dst, offsets[i])
		}
		if err != nil {
			return out, fmt.Errorf("sample %s: %w", names[i], err)
		}
		out.Results[i] = rr
		out.Bytes += rr.Bytes
	}
	return out, nil
}

// readFile reads the whole file at path, which must be n bytes long, into
// dst at off through host memory: pread, plus a copy to the device for a
// device buffer. For sample files in the mount, which GDS cannot read.
func (r *Reader) readFile(ctx context.Context, path string, n int64, dst DeviceBuffer, off int64) (Result, error) {
	ext := Extent{Path: path, Length: n}
	if off < 0 || n > dst.Len()-off {
		return Result{}, fmt.Errorf("gds: %s does not fit at offset %d of a %d-byte destination", ext, off, dst.Len())
	}
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return Result{}, err
	} else if fi.Size() != n {
		return Result{}, fmt.Errorf("gds: %s is %d bytes, the manifest says %d", path, fi.Size(), n)
	}
	if dst.DevicePtr() == 0 {
		err = readHost(ctx, f, ext, dst.HostBytes()[off:off+n])
		return Result{Path: PathHost, Bytes: n}, err
	}
	if r.cuda == nil {
		return Result{}, errors.New("gds: device buffer given to a reader on the host path")
	}
	if n > 0 {
		err = r.readCompat(ctx, f, ext, dst.DevicePtr()+uintptr(off))
	}
	return Result{Path: PathCompat, Bytes: n}, err
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
// before the read is looked up again, which re-materialises it, once; if
// the entry is still missing, the sample file itself is read, through host
// memory.
func (r *Reader) ReadSample(ctx context.Context, path string, dst DeviceBuffer) (Result, error) {
	var res Result
	var err error
	var e Extent
	for attempt := 0; attempt < 2; attempt++ {
		if e, err = SampleExtent(path); err != nil {
			return Result{}, err
		}
		if res, err = r.ReadExtent(ctx, e, dst); err == nil || !evicted(err) {
			break
		}
	}
	if err != nil && evicted(err) {
		if err = r.acquire(); err == nil {
			res, err = r.readFile(ctx, path, e.Length, dst, 0)
			r.mu.RUnlock()
		}
	}
	if err != nil {
		return res, fmt.Errorf("gds: sample %s: %w", path, err)
	}
	return res, nil
}
