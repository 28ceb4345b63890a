package gds

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/deltafs/deltafs/extents"
)

// evicted reports whether a read failed because a cache file is gone: the
// entry was evicted since the extents were taken, the normal end of a
// cache entry.
func evicted(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// corrupt reports whether a read failed because the cache file's bytes are
// not the sample's: they fail the extent's checksum, or the file ends
// inside the extent (entries appear whole, by rename, so a short one was
// damaged).
func corrupt(err error) bool {
	return errors.Is(err, extents.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF)
}

// miss reports whether a read failed in a way that reading the sample
// again, after re-materialising it or through the mount, can cure.
func miss(err error) bool { return evicted(err) || corrupt(err) }

// ShardResult reports a ReadSamples.
type ShardResult struct {
	BatchResult
	// FromMount counts the samples read from their sample files in the
	// mount because their cache entries were missing or still wrong after
	// re-materialising, or had no checksum (deltafs could not cache them).
	FromMount int
	// Corrupt counts the samples whose cache bytes failed verification (a
	// checksum mismatch, a file ending inside the extent) and were read
	// again; their Results have Corrupt set. Each call that sees some logs
	// one warning.
	Corrupt int
}

// ReadSamples reads samples of a shard (paths relative to its directory;
// nil: all of them, in list order) into dst, sample i at the returned
// Offsets[i] (BatchLayout of their extents gives the size dst needs), with
// up to Options.Parallelism reads in flight. Every sample is verified
// against its extent list checksum.
//
// A miss is never returned as data: a sample whose cache file is gone
// (evicted), ends inside its extent or fails its checksum (corrupt), or
// whose extent list line has no checksum (deltafs could not cache it), is
// read again after the extent list is read again (which re-materialises
// the shard: deltafs verifies every entry and rewrites broken ones). Samples still
// missing or wrong then (a shard larger than the disk budget, a sample
// deltafs could not cache) are read through the mount, from their sample
// files, by host memory, and verified against their checksums when known;
// they are counted in ShardResult.FromMount. Corrupt samples are counted in
// ShardResult.Corrupt and logged. If the true bytes cannot be had, the
// error says why and dst must not be used.
func (r *Reader) ReadSamples(ctx context.Context, s *extents.Shard, samples []string, dst DeviceBuffer) (ShardResult, error) {
	names := samples
	if names == nil {
		names = s.Samples()
	}
	exts, err := s.Extents(names)
	if err != nil {
		return ShardResult{}, err
	}
	if err := r.acquire(); err != nil {
		return ShardResult{}, err
	}
	defer r.mu.RUnlock()
	offsets, size := r.BatchLayout(exts)
	out := ShardResult{BatchResult: BatchResult{Offsets: offsets, Size: size, Results: make([]Result, len(exts))}}
	if size > dst.Len() {
		return out, wrapShard(s, fmt.Errorf("batch of %d extents needs %d bytes, destination has %d", len(exts), size, dst.Len()))
	}
	err = r.readShard(ctx, s, names, exts, dst, &out)
	return out, wrapShard(s, err)
}

// readShard does ReadSamples' reads, misses and fallbacks. Call with r.mu
// held.
func (r *Reader) readShard(ctx context.Context, s *extents.Shard, names []string, exts []extents.Extent, dst DeviceBuffer, out *ShardResult) error {
	var known, pending []int
	for i, e := range exts {
		if e.Sum.Known() {
			known = append(known, i)
		} else {
			pending = append(pending, i)
		}
	}
	var firstCorrupt error
	note := func(misses map[int]error) {
		for i, err := range misses {
			pending = append(pending, i)
			if corrupt(err) && !out.Results[i].Corrupt {
				out.Results[i].Corrupt = true
				out.Corrupt++
				if firstCorrupt == nil {
					firstCorrupt = fmt.Errorf("sample %s: %w", names[i], err)
				}
			}
		}
	}
	misses, err := r.readPass(ctx, exts, known, dst, out)
	if err != nil {
		return err
	}
	note(misses)
	if len(pending) > 0 {
		// Read the extent list again: deltafs re-materialises the shard,
		// verifying every entry and rewriting the broken ones.
		if err := s.Refresh(); err != nil {
			return err
		}
		var again, toMount []int
		for _, i := range pending {
			e, ok := s.Extent(names[i])
			if !ok {
				toMount = append(toMount, i)
				continue
			}
			if e.Length != exts[i].Length {
				return fmt.Errorf("sample %s: %d bytes in the extent list read again, %d before", names[i], e.Length, exts[i].Length)
			}
			exts[i] = e
			if e.Sum.Known() {
				again = append(again, i)
			} else {
				toMount = append(toMount, i)
			}
		}
		pending = nil
		misses, err := r.readPass(ctx, exts, again, dst, out)
		if err != nil {
			return err
		}
		note(misses)
		toMount = append(toMount, pending...)
		for _, i := range toMount {
			rr, err := r.readFile(ctx, filepath.Join(s.Dir(), names[i]), exts[i], dst, out.Offsets[i])
			if err != nil {
				return fmt.Errorf("sample %s: %w", names[i], err)
			}
			rr.Corrupt = out.Results[i].Corrupt
			out.Results[i] = rr
			out.FromMount++
		}
	}
	if firstCorrupt != nil {
		slog.Warn("gds: cache bytes failed verification; those samples were read again (re-materialised, else through the mount)",
			"shard", s.Dir(), "samples", out.Corrupt, "first", firstCorrupt)
	}
	out.Bytes = 0
	for _, rr := range out.Results {
		out.Bytes += rr.Bytes
	}
	return nil
}

// readPass reads exts[i] for each i in idx into its place in dst, keeping
// misses (returned by index) and failing on any other error. Each pass
// opens the cache files afresh: an entry rewritten since the last pass is
// a new file at the same path.
func (r *Reader) readPass(ctx context.Context, exts []extents.Extent, idx []int, dst DeviceBuffer, out *ShardResult) (map[int]error, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	fs, err := r.newFileSet(dst)
	if err != nil {
		return nil, err
	}
	defer fs.close()
	results := make([]Result, len(exts))
	misses, err := r.readAll(ctx, fs, exts, idx, dst, out.Offsets, results, miss)
	for _, i := range idx {
		if _, missed := misses[i]; !missed {
			results[i].Corrupt = out.Results[i].Corrupt
			out.Results[i] = results[i]
		}
	}
	return misses, err
}

// readFile reads the whole sample file at path, which must be ext.Length
// bytes long, into dst at off through host memory (pread, plus a copy to
// the device for a device buffer), verified against ext.Sum when known.
// For sample files in the mount, which GDS cannot read.
func (r *Reader) readFile(ctx context.Context, path string, ext extents.Extent, dst DeviceBuffer, off int64) (Result, error) {
	n := ext.Length
	fe := extents.Extent{Path: path, Length: n, Sum: ext.Sum}
	if off < 0 || n > dst.Len()-off {
		return Result{}, fmt.Errorf("gds: %s does not fit at offset %d of a %d-byte destination", fe, off, dst.Len())
	}
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return Result{}, err
	} else if fi.Size() != n {
		return Result{}, fmt.Errorf("gds: %s is %d bytes, the extent says %d", path, fi.Size(), n)
	}
	res := Result{Path: PathHost, Bytes: n}
	var sum uint32
	switch {
	case dst.DevicePtr() == 0:
		b := dst.HostBytes()[off : off+n]
		err = readHost(ctx, f, fe, b)
		sum = crc32.ChecksumIEEE(b)
	case r.cuda == nil:
		return Result{}, errors.New("gds: device buffer given to a reader on the host path")
	default:
		res.Path = PathCompat
		sum, err = r.readCompat(ctx, f, fe, dst.DevicePtr()+uintptr(off))
	}
	if err == nil {
		if err = fe.Verify(sum); err != nil {
			err = fmt.Errorf("read through the mount: %w", err)
		}
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

func wrapShard(s *extents.Shard, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("gds: shard %s: %w", s.Dir(), err)
}

// ReadSample reads the sample file at path (inside a deltafs mount) into
// the start of dst through its extent (see SampleExtent), verified against
// the extent's checksum, as ReadSampleExtent does.
func (r *Reader) ReadSample(ctx context.Context, path string, dst DeviceBuffer) (Result, error) {
	e, err := extents.SampleExtent(path)
	if err != nil {
		return Result{}, err
	}
	return r.ReadSampleExtent(ctx, path, e, dst)
}

// ReadSampleExtent reads the sample file at path (inside a deltafs mount)
// into the start of dst through e, an extent SampleExtent returned for it,
// perhaps some time ago. The bytes are verified against e's checksum. A
// miss is never returned as data: when the cache file is gone, ends early
// or fails the checksum, or e has no checksum, the extent is looked up
// again (which re-materialises the sample: deltafs verifies the entry and
// rewrites a broken one) and read once more; if that misses too, the
// sample file itself is read, through host memory, and verified. A
// corrupt read is logged and reported as Result.Corrupt. If the true bytes
// cannot be had, the error says why and dst must not be used.
func (r *Reader) ReadSampleExtent(ctx context.Context, path string, e extents.Extent, dst DeviceBuffer) (Result, error) {
	var (
		res       Result
		err       error
		corrupted bool
	)
	for attempt := 0; ; attempt++ {
		if e.Sum.Known() {
			res, err = r.ReadExtent(ctx, e, dst)
			if err == nil {
				res.Corrupt = corrupted
				return res, nil
			}
			if !miss(err) {
				return res, fmt.Errorf("gds: sample %s: %w", path, err)
			}
			if corrupt(err) {
				corrupted = true
				slog.Warn("gds: cache bytes of a sample failed verification; reading it again", "sample", path, "err", err)
			}
		}
		if attempt == 1 {
			break
		}
		again, err := extents.SampleExtent(path)
		if err != nil {
			// No extent now (the cache cannot keep the sample): the
			// mount still serves the file.
			slog.Debug("gds: sample has no extent after a miss; reading it through the mount", "sample", path, "err", err)
			break
		}
		if again.Length != e.Length {
			return Result{}, fmt.Errorf("gds: sample %s: %d bytes in its extent looked up again, %d before", path, again.Length, e.Length)
		}
		e = again
	}
	if err = r.acquire(); err == nil {
		res, err = r.readFile(ctx, path, e, dst, 0)
		r.mu.RUnlock()
	}
	if err != nil {
		return res, fmt.Errorf("gds: sample %s: %w", path, err)
	}
	res.Corrupt = corrupted
	return res, nil
}
