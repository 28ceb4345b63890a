package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// Bounds of the --image check: it reads at most probeRows live rows of at
// most probeFiles data files, all but always one page of one file.
const (
	probeRows  = 16 // live rows tried per file for a non-null value
	probeFiles = 4  // data files tried when one cannot be read
)

// checkImageShape refuses --image HxWxC when the data column of snap does
// not hold H*W*C-byte values, so that a wrong shape fails the command at
// once instead of mounting files that all fail to read. It reads one value:
// the first non-null one among the first live rows of the first data file
// that has live rows (one page, through the cache, where the mount would
// read it anyway). Without --image, or on a version without rows, there is
// nothing to check. A data file that cannot be read is skipped (its
// samples fail on their own when read); when none of the files tried can
// be read, the check is skipped with a warning.
func checkImageShape(ctx context.Context, location string, sf *specFlags, fetcher sample.Fetcher, snap *snapshot.Snapshot) error {
	if sf.Image == "" || snap.Schema == nil {
		return nil
	}
	spec, err := sf.spec()
	if err != nil {
		return usageError{err}
	}
	field := dataField(sf, snap.Schema)
	if field == nil {
		return nil // spec.Describe has refused this spec already
	}
	im := spec.Image
	var where *filter.Filter // probe only files a --where keeps
	if spec.Where != nil {
		where, _ = filter.Bind(spec.Where, snap)
	}
	var readErrs []error
	for _, f := range snap.Files {
		if len(readErrs) == probeFiles {
			break
		}
		if f.LiveRows() == 0 {
			continue
		}
		if where != nil {
			if d := where.Decide(snap, f); d == filter.Pruned || d == filter.Skipped {
				continue
			}
		}
		n, row, err := probeFile(ctx, fetcher, snap, f, field.PhysicalName())
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			readErrs = append(readErrs, fileErrorLine(location, &sample.FileError{Version: snap.Version, Path: f.Path, Err: err}))
			continue
		case row < 0:
			continue // no live row, or only nulls among the first ones
		case int64(n) != im.Pixels():
			return fmt.Errorf("%s version %d: %s: --image %s needs %d-byte values (%s), but column %s holds %d bytes",
				location, snap.Version, f.Path, sf.Image, im.Pixels(), im, field.Name, n)
		}
		return nil
	}
	if len(readErrs) > 0 {
		slog.Warn("could not check --image against the data: no data file tried could be read (their samples fail when read)",
			"table", location, "version", snap.Version, "files_tried", len(readErrs), "err", readErrs[0])
	}
	return nil
}

// dataField is the field of the data column: --data-column, else the
// schema's only binary column (the sample layer's default, sample.Spec).
func dataField(sf *specFlags, schema *snapshot.StructType) *snapshot.StructField {
	if sf.DataColumn != "" && sf.DataColumn != sample.NoData {
		return schema.Field(sf.DataColumn)
	}
	var bin *snapshot.StructField
	for i := range schema.Fields {
		if p, ok := schema.Fields[i].Type.(*snapshot.PrimitiveType); ok && p.Name == "binary" {
			if bin != nil {
				return nil
			}
			bin = &schema.Fields[i]
		}
	}
	return bin
}

// probeFile returns the length of the first non-null value of column among
// the first probeRows live rows of f, and its row; row -1 when there is
// none.
func probeFile(ctx context.Context, fetcher sample.Fetcher, snap *snapshot.Snapshot, f *snapshot.AddFile, column string) (n int, row int64, err error) {
	key, err := snap.FileKey(f.Path)
	if err != nil {
		return 0, -1, err
	}
	ref := sample.FileRef{Path: f.Path, Key: key, Size: f.Size}
	rows, err := fetcher.NumRows(ctx, ref)
	if err != nil {
		return 0, -1, err
	}
	deleted, err := snap.DeletedRows(ctx, f)
	if err != nil {
		return 0, -1, err
	}
	tried := 0
	for r := int64(0); r < rows && tried < probeRows; r++ {
		if deleted != nil && deleted.Contains(uint64(r)) {
			continue
		}
		tried++
		v, err := fetcher.Value(ctx, ref, column, r)
		if err != nil {
			return 0, -1, err
		}
		if v != nil {
			return len(v), r, nil
		}
	}
	return 0, -1, nil
}
