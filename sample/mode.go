package sample

import (
	"context"
	"fmt"
	"strconv"

	"github.com/deltafs/deltafs/snapshot"
)

// mode is what a sample file holds: the bytes of a data column
// (bytesMode), its raw pixels encoded as an image (imageMode), or the row
// as JSON (jsonMode). A Spec is resolved against a version's schema to one
// mode (Spec.newMode), which checks the spec against the schema; the
// index, names, sizes, keys and reads ask it, and nothing else tells the
// kinds of samples apart.
//
// A mode is per version, never per sample: what it measures per sample
// lives in the file's compact index (fileSamples.sizes and exts).
type mode interface {
	// identity tells the modes apart in the key of a file's sample
	// metadata. It is part of the persistent index's keys (indexKey):
	// changing it orphans every index in a disk cache.
	identity() string
	// describe is the data part of Spec.Describe.
	describe() string

	// columns are the columns the index reads row by row besides the id
	// and class columns; their values reach index as text.
	columns() []*column
	// findsRows reports whether index finds the file's live rows itself,
	// so that the row scan is needed only for ids or classes.
	findsRows() bool
	// index measures a file's samples as it is indexed: fs.sizes and
	// fs.exts, where ext and size do not fix them.
	index(ctx context.Context, b *fileBuild) error

	// ext is the extension of every sample, or "" when each has its own
	// (fileSamples.exts).
	ext() string
	// size is the size of every sample, or -1 when each has its own
	// (fileSamples.sizes).
	size() int64
	// fileKey is what a file's sample metadata depends on beyond the
	// resolved columns ("" when nothing).
	fileKey(v *Version) string
	// sampleKey is the column and unit of a sample's content key
	// (Shard.SampleKey).
	sampleKey(v *Version, row int64) (column, unit string)

	// content is the bytes of live row li of segment sg, or the error the
	// read answers: a FileError, a SampleError, or the request's end.
	content(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error)
	// fill reads what content needs into the caches without encoding it.
	fill(ctx context.Context, sh *Shard, sg *segment, li int) error
}

// rangeMode is a mode whose samples can be read in part, when ranges
// says so for the shard (its fetcher reads parts of values).
type rangeMode interface {
	ranges(sh *Shard) bool
	// readAt reads bytes [off, off+len(p)) of live row li of segment sg:
	// the count read, 0 at or past its end; errors as content's.
	readAt(ctx context.Context, sh *Shard, sg *segment, li int, p []byte, off int64) (int, error)
}

// colFunc resolves a column of the schema by name; implicit columns that
// are missing are nil without an error, named ones an error naming flag.
type colFunc func(flag, name string, implicit bool) (*column, error)

// newMode chooses the mode of the spec for a schema whose data column
// resolved to data (nil: none), checking that the two fit.
func (s *Spec) newMode(schema *snapshot.StructType, data *column, col colFunc) (mode, error) {
	if s.Image.H > 0 {
		return s.newImageMode(schema, data)
	}
	if data == nil {
		return jsonMode{}, nil
	}
	if err := checkData(data); err != nil {
		return nil, err
	}
	return newBytesMode(schema, data, col), nil
}

// checkData checks that a data column can hold samples.
func checkData(data *column) error {
	if data.typ != "binary" && data.typ != "string" {
		return fmt.Errorf("data column %s is %s; it must be binary (or string)", data.name, data.typ)
	}
	if data.partKey {
		return fmt.Errorf("data column %s is a partition column", data.name)
	}
	return nil
}

// binaryColumns are the names of the schema's binary columns.
func binaryColumns(schema *snapshot.StructType) []string {
	var bins []string
	for _, f := range schema.Fields {
		if p, ok := f.Type.(*snapshot.PrimitiveType); ok && p.Name == "binary" {
			bins = append(bins, f.Name)
		}
	}
	return bins
}

// dataColumn is what the modes reading a data column's value share.
type dataColumn struct {
	data *column
}

// value is the data column's value at live row li of segment sg, or a
// FileError.
func (d dataColumn) value(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	data, err := d.fetch(ctx, sh, sg, li)
	if err != nil {
		return nil, sh.readErr(ctx, sg, err)
	}
	return data, nil
}

// fetch is value with the fetcher's error as it is.
func (d dataColumn) fetch(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	return sh.v.s.opts.Fetcher.Value(ctx, sg.ref, d.data.phys, sg.fs.row(li))
}

// fill reads the value's page into the caches.
func (d dataColumn) fill(ctx context.Context, sh *Shard, sg *segment, li int) error {
	_, err := d.value(ctx, sh, sg, li)
	return err
}

func (d dataColumn) sampleKey(_ *Version, row int64) (string, string) {
	return d.data.phys, rowUnit(row)
}

// rowUnit is a physical row in a cache key.
func rowUnit(row int64) string { return strconv.FormatInt(row, 10) }
