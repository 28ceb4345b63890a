package sample

import (
	"context"
	"fmt"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/snapshot"
)

// Bounds of CheckImage: it reads at most imageProbeRows live rows of at
// most imageProbeFiles data files, all but always one page of one file.
const (
	imageProbeRows  = 16 // live rows tried per file for a non-null value
	imageProbeFiles = 4  // data files tried when one cannot be read
)

// CheckImage refuses Spec.Image (--image HxWxC) when the version's data
// column does not hold H*W*C-byte values, so that a wrong shape fails the
// command at once instead of mounting files that all fail to read. It
// reads one value: the first non-null one among the first live rows of
// the first data file that has live rows and that the version's filter
// keeps (one page, through the fetcher's cache, without read-ahead). Without an image, on a version without rows, or when
// the spec does not fit the version (Servable says why), there is nothing
// to check. A data file that cannot be read is skipped (its samples fail
// on their own when read); when none of the files tried can be read, the
// check is skipped with a warning. The error names the table, version and
// data file (a *FileError).
func (v *Version) CheckImage(ctx context.Context) error {
	im := v.s.opts.Spec.Image
	if im.H <= 0 {
		return nil
	}
	v.mu.Lock()
	err := v.resolveLocked()
	r := v.spec
	v.mu.Unlock()
	if err != nil || r.data == nil {
		return nil
	}
	var readErrs []error
	for _, f := range v.snap.Files {
		if len(readErrs) == imageProbeFiles {
			break
		}
		if f.LiveRows() == 0 {
			continue
		}
		if d := v.decision(f); d == filter.Pruned || d == filter.Skipped {
			continue
		}
		n, row, err := v.probeValue(ctx, f, r.data.phys)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			readErrs = append(readErrs, v.fileErr(f.Path, err))
			continue
		case row < 0:
			continue // no live row, or only nulls among the first ones
		case int64(n) != im.Pixels():
			shape := fmt.Sprintf("%dx%d", im.H, im.W)
			if im.C != 1 {
				shape += fmt.Sprintf("x%d", im.C)
			}
			return v.fileErr(f.Path, fmt.Errorf("--image %s needs %d-byte values (%s), but column %s holds %d bytes",
				shape, im.Pixels(), im, r.data.name, n))
		}
		return nil
	}
	if len(readErrs) > 0 {
		v.s.log.Warn("could not check --image against the data: no data file tried could be read (their samples fail when read)",
			"table", v.s.location(), "version", v.snap.Version, "files_tried", len(readErrs), "err", readErrs[0])
	}
	return nil
}

// probeValue returns the length of the first non-null value of column
// (physical name) among the first imageProbeRows live rows of data file
// f, and its row; row -1 when there is none.
func (v *Version) probeValue(ctx context.Context, f *snapshot.AddFile, column string) (n int, row int64, err error) {
	key, err := v.s.opts.FileKey(v.snap, f.Path)
	if err != nil {
		return 0, -1, err
	}
	fetcher := v.s.opts.Fetcher
	// Identified as the index build identifies it (one Stat per process),
	// so that the tail and the page read here are the cache entries its
	// reads find, not entries of another identity read again.
	ref, err := fetcher.Identify(ctx, page.FileRef{Path: f.Path, Key: key, Size: f.Size})
	if err != nil {
		return 0, -1, err
	}
	rows, err := fetcher.NumRows(ctx, ref)
	if err != nil {
		return 0, -1, err
	}
	deleted, err := v.snap.DeletedRows(ctx, f)
	if err != nil {
		return 0, -1, err
	}
	tried := 0
	for r := int64(0); r < rows && tried < imageProbeRows; r++ {
		if deleted != nil && deleted.Contains(uint64(r)) {
			continue
		}
		tried++
		// No read-ahead: the check needs this row's page only, and the
		// pages after it may be no shard's of this node.
		ref.ReadAheadEnd = r + 1
		val, err := fetcher.Value(ctx, ref, column, r)
		if err != nil {
			return 0, -1, err
		}
		if val != nil {
			return len(val), r, nil
		}
	}
	return 0, -1, nil
}
