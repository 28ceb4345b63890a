package sample

import (
	"context"
	"fmt"
	"math"

	"github.com/deltafs/deltafs/snapshot"
)

// bytesMode: a sample is the value of a binary (or string) data column as
// it is. Its extension is sniffed from the first bytes (sniffExt), else
// taken from a `path` string column (pathExt), else ".bin"; sizes and
// extensions are measured once, when a file is indexed.
type bytesMode struct {
	dataColumn
	path *column // a `path` string column, for extensions; nil: none
}

func newBytesMode(schema *snapshot.StructType, data *column, col colFunc) *bytesMode {
	m := &bytesMode{dataColumn: dataColumn{data: data}}
	if f := schema.Field("path"); f != nil && f.Type.String() == "string" && data.name != "path" {
		m.path, _ = col("", "path", true)
	}
	return m
}

func (m *bytesMode) identity() string { return "m1" }

func (m *bytesMode) describe() string {
	return fmt.Sprintf("data=%s (bytes, extension sniffed)", m.data.name)
}

func (m *bytesMode) columns() []*column {
	if m.path == nil {
		return nil
	}
	return []*column{m.path}
}

func (m *bytesMode) findsRows() bool { return false }

func (m *bytesMode) ext() string             { return "" }
func (m *bytesMode) size() int64             { return -1 }
func (m *bytesMode) fileKey(*Version) string { return "" }

func (m *bytesMode) content(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	return m.value(ctx, sh, sg, li)
}

// ranges: a sample is its value as it is, so a part of it is a part of
// the value, which a RangeFetcher reads.
func (m *bytesMode) ranges(sh *Shard) bool {
	_, ok := sh.v.s.opts.Fetcher.(RangeFetcher)
	return ok
}

func (m *bytesMode) readAt(ctx context.Context, sh *Shard, sg *segment, li int, p []byte, off int64) (int, error) {
	n, err := sh.v.s.opts.Fetcher.(RangeFetcher).ValueAt(ctx, sg.ref, m.data.phys, sg.fs.row(li), p, off)
	if err != nil {
		return 0, sh.readErr(ctx, sg, err)
	}
	return n, nil
}

// index takes each live row's size and extension from the data column,
// read page by page through the fetcher (Fetcher.Values): the pages
// decoded here stay in the cache (and feed read-ahead), so a cold epoch
// reads the data column from storage once, not once for the index and
// again for the samples.
func (m *bytesMode) index(ctx context.Context, b *fileBuild) error {
	fs, rows := b.fs, b.rows
	var paths []string // each live row's path
	if m.path != nil {
		paths = b.vals[0]
	}
	fs.sizes = make([]uint32, 0, len(rows))
	fs.exts = make([]uint8, 0, len(rows))
	extIdx := map[string]uint8{}
	next := 0 // the next live row's ordinal
	each := func(row, size int64, head []byte) error {
		if next >= len(rows) || int64(rows[next]) != row {
			return nil // a deleted row, or one a filter leaves out
		}
		if size > math.MaxUint32 {
			return fmt.Errorf("row %d: a value of %d bytes, past the largest sample (4 GiB)", row, size)
		}
		fs.sizes = append(fs.sizes, uint32(size))
		ext := sniffHead(head, size)
		if ext == "" && paths != nil {
			ext = pathExt(paths[next])
		}
		if ext == "" {
			ext = ".bin"
		}
		ei, seen := extIdx[ext]
		if !seen {
			if len(fs.extTab) >= 255 {
				// One byte a sample: past 255 extensions in a file, the
				// rest are named .bin (the last slot is kept for it).
				if ei, seen = extIdx[".bin"]; !seen {
					ei = uint8(len(fs.extTab))
					extIdx[".bin"] = ei
					fs.extTab = append(fs.extTab, ".bin")
				}
			} else {
				ei = uint8(len(fs.extTab))
				extIdx[ext] = ei
				fs.extTab = append(fs.extTab, ext)
			}
		}
		fs.exts = append(fs.exts, ei)
		next++
		return nil
	}
	// A RangeFetcher gives sizes and first bytes without whole values
	// in memory (pages too large for it are decoded as a stream).
	f := b.v.s.opts.Fetcher
	rf, ranged := f.(RangeFetcher)
	var err error
	if b.filtered {
		// Only the rows the filter keeps: the pages they lie in, not the
		// whole column (each page once, through the cache).
		for _, row := range rows {
			var size int64
			var head []byte
			if ranged {
				size, head, err = rf.Head(ctx, fs.ref, m.data.phys, int64(row), sniffBytes)
			} else {
				head, err = f.Value(ctx, fs.ref, m.data.phys, int64(row))
				size = int64(len(head))
			}
			if err != nil {
				break
			}
			if err = each(int64(row), size, head); err != nil {
				break
			}
		}
	} else if ranged {
		err = rf.Heads(ctx, fs.ref, m.data.phys, sniffBytes, each)
	} else {
		err = f.Values(ctx, fs.ref, m.data.phys, func(row int64, v []byte) error { return each(row, int64(len(v)), v) })
	}
	if err != nil {
		return err
	}
	if next != len(rows) {
		return fmt.Errorf("the data column has %d of the %d live rows", next, len(rows))
	}
	return nil
}
