package pqcheck

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// File is a Parquet file whose footer passed the checks: its decoded
// metadata, and what the page checks need of it.
type File struct {
	Meta        *format.FileMetaData
	Size        int64 // bytes in the file
	FooterStart int64 // offset of the footer's first byte (data, page index and bloom filters lie before)
	leaves      []leaf
}

// leaf is a leaf column of the schema, in column chunk order.
type leaf struct {
	path     string // dotted, for messages
	repeated bool   // it or an ancestor is repeated: a row may hold many values
}

// Footer checks the end of a Parquet file of size bytes whose last
// len(tail) bytes are tail (at least the footer and the 8 bytes after
// it), and decodes its footer:
//
//   - the magic bytes, and a footer length that fits in the file and in
//     MaxFooterBytes;
//   - every size the footer's Thrift claims, against the bytes left and
//     MaxDecodeBytes (see walkThrift);
//   - the schema: a tree covering every element, at most maxSchemaDepth
//     deep;
//   - every row group: as many column chunks as the schema has leaves,
//     row counts that add up to the file's, every column chunk and page
//     index region inside the bytes before the footer.
func Footer(tail []byte, size int64) (*File, error) {
	if size < 12 {
		return nil, fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	if len(tail) < 8 || int64(len(tail)) > size {
		return nil, fmt.Errorf("Parquet footer: %d bytes of a %d-byte file do not hold its end", len(tail), size)
	}
	switch string(tail[len(tail)-4:]) {
	case "PAR1":
	case "PARE":
		return nil, fmt.Errorf("the Parquet footer is encrypted (not supported)")
	default:
		return nil, fmt.Errorf("no Parquet magic at the end of the file (not a Parquet file, or truncated)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n+12 > size {
		return nil, fmt.Errorf("Parquet footer length %d does not fit in a %d-byte file", n, size)
	}
	if n > MaxFooterBytes {
		return nil, fmt.Errorf("Parquet footer length %d is over the limit of %d MiB", n, MaxFooterBytes>>20)
	}
	if n+8 > int64(len(tail)) {
		return nil, &shortTailError{have: len(tail), size: size, footer: n}
	}
	footer := tail[int64(len(tail))-8-n : len(tail)-8]
	used, err := walkThrift(footer, reflect.TypeFor[format.FileMetaData](), MaxDecodeBytes)
	if err != nil {
		return nil, fmt.Errorf("Parquet footer: %w", err)
	}
	if used != len(footer) {
		return nil, fmt.Errorf("Parquet footer: %d bytes after its end", len(footer)-used)
	}
	md := new(format.FileMetaData)
	var proto thrift.CompactProtocol
	if err := thrift.Unmarshal(&proto, footer, md); err != nil {
		return nil, fmt.Errorf("Parquet footer: %w", err)
	}
	f := &File{Meta: md, Size: size, FooterStart: size - 8 - n}
	if err := f.checkSchema(); err != nil {
		return nil, fmt.Errorf("Parquet footer: schema: %w", err)
	}
	if err := f.checkRowGroups(); err != nil {
		return nil, fmt.Errorf("Parquet footer: %w", err)
	}
	return f, nil
}

// shortTailError is a tail that does not hold the whole footer.
type shortTailError struct {
	have         int
	size, footer int64
}

func (e *shortTailError) Error() string {
	return fmt.Sprintf("Parquet footer: %d bytes of a %d-byte file do not hold its %d-byte footer", e.have, e.size, e.footer)
}

// footerLen is the footer length the last 8 bytes of tail claim.
func footerLen(tail []byte) int64 { return int64(binary.LittleEndian.Uint32(tail[len(tail)-8:])) }

// maxSchemaDepth bounds the nesting of the schema. parquet-go gives each
// column its path from the root, so a schema of N elements nested D deep
// costs N×D strings before parquet-go checks its own limit (255).
const maxSchemaDepth = 64

// columnCost is what parquet-go allocates for each schema element when it
// builds its column tree (a Column, a child pointer, a field).
var columnCost = int64(unsafe.Sizeof(parquet.Column{})) + 8 + 16

// checkSchema checks that the flattened schema is one tree (each group's
// children follow it, depth first) and records the leaves.
func (f *File) checkSchema() error {
	schema := f.Meta.Schema
	if len(schema) == 0 {
		return fmt.Errorf("no root element")
	}
	type open struct {
		left     int64 // children still to come
		repeated bool
		path     string
	}
	var stack []open
	segments := int64(0)
	for i := range schema {
		el := &schema[i]
		if i > 0 && len(stack) == 0 {
			return fmt.Errorf("%d elements after the end of the tree", len(schema)-i)
		}
		depth := len(stack)
		if depth > maxSchemaDepth {
			return fmt.Errorf("nested more than %d levels deep", maxSchemaDepth)
		}
		segments += int64(depth) + 1
		path, repeated := "", false
		if depth > 0 {
			top := &stack[depth-1]
			top.left--
			path, repeated = top.path, top.repeated
			if path != "" {
				path += "."
			}
			path += el.Name
			repeated = repeated || (el.RepetitionType.Valid && el.RepetitionType.V == format.Repeated)
		}
		children := int64(0)
		if el.NumChildren.Valid {
			children = int64(el.NumChildren.V)
		}
		switch {
		case children < 0:
			return fmt.Errorf("element %q claims %d children", el.Name, children)
		case el.Type.Valid && children > 0:
			return fmt.Errorf("leaf %q claims %d children", el.Name, children)
		case children > int64(len(schema)-i-1):
			return fmt.Errorf("element %q claims %d children, %d elements follow", el.Name, children, len(schema)-i-1)
		case i == 0 && el.Type.Valid:
			return fmt.Errorf("the root is a leaf")
		}
		if el.Type.Valid {
			f.leaves = append(f.leaves, leaf{path: path, repeated: repeated})
		}
		if children > 0 {
			stack = append(stack, open{left: children, repeated: repeated, path: path})
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("element %q claims %d more children than there are elements", stack[len(stack)-1].path, stack[len(stack)-1].left)
	}
	if cost := segments*16 + int64(len(schema))*columnCost; cost > MaxDecodeBytes {
		return fmt.Errorf("%d elements nested this deep take more than %d MiB", len(schema), MaxDecodeBytes>>20)
	}
	return nil
}

// checkRowGroups checks each row group's columns, rows and byte ranges.
func (f *File) checkRowGroups() error {
	md := f.Meta
	var rows, ciTotal, oiTotal int64
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		if len(rg.Columns) != len(f.leaves) {
			return fmt.Errorf("row group %d has %d column chunks, the schema %d leaf columns", i, len(rg.Columns), len(f.leaves))
		}
		if rg.NumRows < 0 || rg.NumRows > math.MaxInt64-rows {
			return fmt.Errorf("row group %d claims %d rows", i, rg.NumRows)
		}
		rows += rg.NumRows
		for _, s := range rg.SortingColumns {
			if s.ColumnIdx < 0 || int(s.ColumnIdx) >= len(f.leaves) {
				return fmt.Errorf("row group %d is sorted by column %d of %d", i, s.ColumnIdx, len(f.leaves))
			}
		}
		for j := range rg.Columns {
			c := &rg.Columns[j]
			name := f.leaves[j].path
			off, n := f.ChunkRange(i, j)
			if off < 4 || n < 0 || off > f.FooterStart || n > f.FooterStart-off {
				return fmt.Errorf("column %s: a chunk of %d bytes at offset %d, the data ends at %d", name, n, off, f.FooterStart)
			}
			if c.ColumnIndexLength < 0 || c.OffsetIndexLength < 0 {
				return fmt.Errorf("column %s: a page index of %d or %d bytes", name, c.ColumnIndexLength, c.OffsetIndexLength)
			}
			// parquet-go reads every chunk's index in one buffer of their
			// total length.
			ciTotal += int64(c.ColumnIndexLength)
			oiTotal += int64(c.OffsetIndexLength)
			if err := f.checkRegion(name, "column index", c.ColumnIndexOffset, c.ColumnIndexLength); err != nil {
				return err
			}
			if err := f.checkRegion(name, "offset index", c.OffsetIndexOffset, c.OffsetIndexLength); err != nil {
				return err
			}
		}
	}
	if rows != md.NumRows {
		return fmt.Errorf("the row groups hold %d rows, the file claims %d", rows, md.NumRows)
	}
	if ciTotal > f.FooterStart || oiTotal > f.FooterStart {
		return fmt.Errorf("page indexes of %d and %d bytes in total, the data ends at %d", ciTotal, oiTotal, f.FooterStart)
	}
	if len(md.RowGroups) > 0 && len(f.leaves) > 0 {
		// parquet-go reads all column (offset) indexes as one region from
		// the first chunk's, of their total length, and cuts each chunk's
		// out of it (a panic when one lies outside).
		first := &md.RowGroups[0].Columns[0]
		for i := range md.RowGroups {
			for j := range md.RowGroups[i].Columns {
				c := &md.RowGroups[i].Columns[j]
				if err := inRegion(f.leaves[j].path, "column index", c.ColumnIndexOffset, c.ColumnIndexLength, first.ColumnIndexOffset, ciTotal); err != nil {
					return err
				}
				if err := inRegion(f.leaves[j].path, "offset index", c.OffsetIndexOffset, c.OffsetIndexLength, first.OffsetIndexOffset, oiTotal); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// inRegion checks that an index at off, of n bytes, lies in the region
// parquet-go reads for all indexes of its kind: [start, start+total).
func inRegion(column, kind string, off int64, n int32, start, total int64) error {
	if start == 0 || off == 0 {
		return nil // none read at open (a chunk's own is read alone)
	}
	if off < start || off-start > total-int64(n) {
		return fmt.Errorf("column %s: a %s at offset %d, outside the page index at %d..%d", column, kind, off, start, start+total)
	}
	return nil
}

// checkRegion checks that a page index region lies before the footer.
func (f *File) checkRegion(column, kind string, off int64, n int32) error {
	if off == 0 {
		return nil // none
	}
	if off < 4 || off > f.FooterStart || int64(n) > f.FooterStart-off {
		return fmt.Errorf("column %s: a %s of %d bytes at offset %d, the data ends at %d", column, kind, n, off, f.FooterStart)
	}
	return nil
}

// ChunkRange is the byte range [off, off+n) of column chunk col of row
// group rg, as parquet-go reads it: from the dictionary page when there is
// one, for the chunk's total compressed size. Footer checked it lies
// before the footer.
func (f *File) ChunkRange(rg, col int) (off, n int64) {
	m := &f.Meta.RowGroups[rg].Columns[col].MetaData
	off = m.DataPageOffset
	if m.DictionaryPageOffset != 0 {
		off = m.DictionaryPageOffset
	}
	return off, m.TotalCompressedSize
}

// Column is the dotted path of leaf column col, for messages.
func (f *File) Column(col int) string {
	if col < 0 || col >= len(f.leaves) {
		return fmt.Sprintf("#%d", col)
	}
	return f.leaves[col].path
}

// IndexStart is the offset of the first byte of the file's page index
// (column and offset indexes, which writers put just before the footer);
// FooterStart when the file has none.
func (f *File) IndexStart() int64 {
	start := f.FooterStart
	for _, rg := range f.Meta.RowGroups {
		for _, c := range rg.Columns {
			if c.OffsetIndexOffset > 0 {
				start = min(start, c.OffsetIndexOffset)
			}
			if c.ColumnIndexOffset > 0 {
				start = min(start, c.ColumnIndexOffset)
			}
		}
	}
	return start
}
