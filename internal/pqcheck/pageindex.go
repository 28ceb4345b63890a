package pqcheck

import (
	"fmt"
	"reflect"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// CheckPageIndex checks the page index of f: every column index and offset
// index region must be one Thrift struct filling it, whose sizes pass
// walkThrift, and every page an offset index locates must lie inside its
// column chunk, with first rows in order inside the row group (deltafs
// reads a page's bytes by its location). b holds the file's bytes from
// offset off up to the footer at least, with off <= f.IndexStart().
//
// Footer has checked every region lies before the footer.
func (f *File) CheckPageIndex(b []byte, off int64) error {
	if off > f.IndexStart() || off+int64(len(b)) < f.FooterStart {
		return fmt.Errorf("page index: bytes %d..%d do not hold it (%d..%d)", off, off+int64(len(b)), f.IndexStart(), f.FooterStart)
	}
	region := func(o int64, n int32) []byte { return b[o-off : o-off+int64(n)] }
	var proto thrift.CompactProtocol
	for i := range f.Meta.RowGroups {
		rg := &f.Meta.RowGroups[i]
		for j := range rg.Columns {
			c := &rg.Columns[j]
			name := f.leaves[j].path
			if c.ColumnIndexOffset != 0 {
				r := region(c.ColumnIndexOffset, c.ColumnIndexLength)
				if err := walkRegion(r, reflect.TypeFor[format.ColumnIndex]()); err != nil {
					return fmt.Errorf("column %s: column index: %w", name, err)
				}
			}
			if c.OffsetIndexOffset == 0 {
				continue
			}
			r := region(c.OffsetIndexOffset, c.OffsetIndexLength)
			if err := walkRegion(r, reflect.TypeFor[format.OffsetIndex]()); err != nil {
				return fmt.Errorf("column %s: offset index: %w", name, err)
			}
			var oi format.OffsetIndex
			if err := thrift.Unmarshal(&proto, r, &oi); err != nil {
				return fmt.Errorf("column %s: offset index: %w", name, err)
			}
			if err := f.checkLocations(i, j, oi.PageLocations); err != nil {
				return fmt.Errorf("column %s: offset index: %w", name, err)
			}
		}
	}
	return nil
}

// walkRegion checks that r is one Thrift struct of type t, no more.
func walkRegion(r []byte, t reflect.Type) error {
	n, err := walkThrift(r, t, MaxDecodeBytes)
	if err != nil {
		return err
	}
	if n != len(r) {
		return fmt.Errorf("%d bytes after its end", len(r)-n)
	}
	return nil
}

// checkLocations checks the pages an offset index locates.
func (f *File) checkLocations(rg, col int, locs []format.PageLocation) error {
	start, size := f.ChunkRange(rg, col)
	rows := f.Meta.RowGroups[rg].NumRows
	prev := int64(-1)
	for k, l := range locs {
		if l.Offset < start || l.CompressedPageSize <= 0 || int64(l.CompressedPageSize) > start+size-l.Offset {
			return fmt.Errorf("page %d of %d bytes at offset %d lies outside its chunk of %d bytes at %d", k, l.CompressedPageSize, l.Offset, size, start)
		}
		if l.FirstRowIndex < 0 || l.FirstRowIndex < prev || (l.FirstRowIndex >= rows && rows > 0) {
			return fmt.Errorf("page %d starts at row %d (the previous page at %d, the row group has %d)", k, l.FirstRowIndex, prev, rows)
		}
		prev = l.FirstRowIndex
	}
	return nil
}
