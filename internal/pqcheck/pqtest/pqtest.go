// Package pqtest builds Parquet files with hostile claims for tests: a
// real file is taken apart into its pages, page index and footer, one
// claim is changed, and the file is put back together with every offset,
// length and page location true again — so that only the claim is
// hostile. It also builds footers of a few bytes that claim huge lists.
package pqtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// File is a Parquet file taken apart.
type File struct {
	Meta   format.FileMetaData
	Chunks [][]Chunk // [row group][column]
}

// Chunk is one column chunk: its pages, and its page index as raw Thrift
// (nil when it has none).
type Chunk struct {
	Pages          []Page
	ColumnIndex    []byte
	OffsetIndex    *format.OffsetIndex // first rows of its data pages; locations are rewritten
	RawOffsetIndex []byte              // when set, written instead of OffsetIndex
}

// Page is a page header and its bytes.
type Page struct {
	Header format.PageHeader
	Body   []byte
}

// Parse takes a Parquet file apart.
func Parse(data []byte) (*File, error) {
	var proto thrift.CompactProtocol
	if len(data) < 12 || string(data[len(data)-4:]) != "PAR1" {
		return nil, fmt.Errorf("not a Parquet file")
	}
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	f := &File{}
	if err := thrift.Unmarshal(&proto, data[len(data)-8-flen:len(data)-8], &f.Meta); err != nil {
		return nil, err
	}
	for _, rg := range f.Meta.RowGroups {
		var chunks []Chunk
		for _, c := range rg.Columns {
			m := c.MetaData
			off := m.DataPageOffset
			if m.DictionaryPageOffset != 0 {
				off = m.DictionaryPageOffset
			}
			var ch Chunk
			for b := data[off : off+m.TotalCompressedSize]; len(b) > 0; {
				r := proto.NewReaderFromBytes(b)
				var p Page
				if err := thrift.NewDecoder(r).Decode(&p.Header); err != nil {
					return nil, err
				}
				n := r.BytesRead()
				p.Body = bytes.Clone(b[n : n+int(p.Header.CompressedPageSize)])
				b = b[n+int(p.Header.CompressedPageSize):]
				ch.Pages = append(ch.Pages, p)
			}
			if c.ColumnIndexOffset != 0 {
				ch.ColumnIndex = bytes.Clone(data[c.ColumnIndexOffset : c.ColumnIndexOffset+int64(c.ColumnIndexLength)])
			}
			if c.OffsetIndexOffset != 0 {
				ch.OffsetIndex = new(format.OffsetIndex)
				if err := thrift.Unmarshal(&proto, data[c.OffsetIndexOffset:c.OffsetIndexOffset+int64(c.OffsetIndexLength)], ch.OffsetIndex); err != nil {
					return nil, err
				}
			}
			chunks = append(chunks, ch)
		}
		f.Chunks = append(f.Chunks, chunks)
	}
	return f, nil
}

// Column is the index of the leaf column whose dotted path is path.
func (f *File) Column(path string) int {
	for i, c := range f.Meta.RowGroups[0].Columns {
		if strings.Join(c.MetaData.PathInSchema, ".") == path {
			return i
		}
	}
	panic("pqtest: no column " + path)
}

// Page returns page k of column path in row group rg, counting data pages
// only (k = -1: the dictionary page).
func (f *File) Page(rg int, path string, k int) *Page {
	ch := &f.Chunks[rg][f.Column(path)]
	for i := range ch.Pages {
		p := &ch.Pages[i]
		if p.Header.Type == format.DictionaryPage {
			if k == -1 {
				return p
			}
			continue
		}
		if k == 0 {
			return p
		}
		k--
	}
	panic(fmt.Sprintf("pqtest: no page %d in column %s", k, path))
}

// StripPageIndex drops every column and offset index.
func (f *File) StripPageIndex() {
	for _, chunks := range f.Chunks {
		for i := range chunks {
			chunks[i].ColumnIndex, chunks[i].OffsetIndex, chunks[i].RawOffsetIndex = nil, nil, nil
		}
	}
}

// Bytes puts the file back together: "PAR1", every chunk's pages (row
// group by row group), the column indexes, the offset indexes (each page
// located where it now lies), the footer with every offset and length
// true.
func (f *File) Bytes() []byte {
	var proto thrift.CompactProtocol
	mustMarshal := func(v any) []byte {
		b, err := thrift.Marshal(&proto, v)
		if err != nil {
			panic(err)
		}
		return b
	}
	out := []byte("PAR1")
	type located struct{ offs, sizes []int64 }
	locs := map[[2]int]located{}
	for i := range f.Chunks {
		rg := &f.Meta.RowGroups[i]
		rg.TotalCompressedSize = 0
		for j := range f.Chunks[i] {
			ch := &f.Chunks[i][j]
			m := &rg.Columns[j].MetaData
			start := int64(len(out))
			m.DictionaryPageOffset, m.DataPageOffset = 0, 0
			var l located
			for _, p := range ch.Pages {
				at := int64(len(out))
				out = append(out, mustMarshal(&p.Header)...)
				out = append(out, p.Body...)
				if p.Header.Type == format.DictionaryPage {
					m.DictionaryPageOffset = at
				} else {
					if m.DataPageOffset == 0 {
						m.DataPageOffset = at
					}
					l.offs = append(l.offs, at)
					l.sizes = append(l.sizes, int64(len(out))-at)
				}
			}
			m.TotalCompressedSize = int64(len(out)) - start
			rg.Columns[j].FileOffset = start
			if j == 0 {
				rg.FileOffset = start
			}
			rg.TotalCompressedSize += m.TotalCompressedSize
			locs[[2]int{i, j}] = l
		}
	}
	for i := range f.Chunks {
		for j := range f.Chunks[i] {
			c := &f.Meta.RowGroups[i].Columns[j]
			c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0
			if ci := f.Chunks[i][j].ColumnIndex; ci != nil {
				c.ColumnIndexOffset, c.ColumnIndexLength = int64(len(out)), int32(len(ci))
				out = append(out, ci...)
			}
		}
	}
	for i := range f.Chunks {
		for j := range f.Chunks[i] {
			ch := &f.Chunks[i][j]
			c := &f.Meta.RowGroups[i].Columns[j]
			c.OffsetIndexOffset, c.OffsetIndexLength = 0, 0
			raw := ch.RawOffsetIndex
			if raw == nil && ch.OffsetIndex != nil {
				oi := *ch.OffsetIndex
				l := locs[[2]int{i, j}]
				oi.PageLocations = append([]format.PageLocation(nil), oi.PageLocations...)
				for k := range oi.PageLocations {
					if k < len(l.offs) {
						oi.PageLocations[k].Offset, oi.PageLocations[k].CompressedPageSize = l.offs[k], int32(l.sizes[k])
					}
				}
				raw = mustMarshal(&oi)
			}
			if raw != nil {
				c.OffsetIndexOffset, c.OffsetIndexLength = int64(len(out)), int32(len(raw))
				out = append(out, raw...)
			}
		}
	}
	footer := mustMarshal(&f.Meta)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// Thrift compact element types, for ListBomb.
const (
	Bool   = 0x01
	Binary = 0x08
	Struct = 0x0c
)

// ListBomb is a struct field (its id fieldDelta after the previous one)
// holding a Thrift list of elem claiming n elements, then padding up to
// size bytes.
func ListBomb(fieldDelta, elem byte, n uint64, size int) []byte {
	b := []byte{fieldDelta<<4 | 0x09, 0xf0 | elem} // field: list; long size
	b = binary.AppendUvarint(b, n)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

// ColumnIndexBomb is a column index whose min_values claim n values,
// padded to size bytes.
func ColumnIndexBomb(n uint64, size int) []byte {
	b := []byte{0x19, 0x00 | Bool} // null_pages: an empty list
	return append(b, ListBomb(1, Binary, n, size-len(b))...)
}

// FooterBomb is a Parquet file of a few dozen bytes whose footer claims a
// list of n elements: of schema elements (what "schema"), row groups
// ("row_groups") or a row group's column chunks ("columns").
func FooterBomb(what string, n uint64) []byte {
	var footer []byte
	footer = append(footer, 0x15, 0x02) // field 1 (version): i32 1
	switch what {
	case "schema":
		footer = append(footer, ListBomb(1, Struct, n, 0)...) // field 2
	case "row_groups", "columns":
		// field 2: schema, one root element with no children
		footer = append(footer, 0x19, 0x1c)                        // list of 1 struct
		footer = append(footer, 0x48, 4, 'r', 'o', 'o', 't', 0x00) // field 4 (name)
		footer = append(footer, 0x16, 0x00)                        // field 3 (num_rows): i64 0
		if what == "row_groups" {
			footer = append(footer, ListBomb(1, Struct, n, 0)...) // field 4
		} else {
			footer = append(footer, 0x19, 0x1c)                   // field 4: list of 1 row group
			footer = append(footer, ListBomb(1, Struct, n, 0)...) // its field 1: columns
		}
	default:
		panic("pqtest: FooterBomb of " + what)
	}
	footer = append(footer, 0x00)
	data := []byte("PAR1")
	data = append(data, footer...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(footer)))
	return append(data, "PAR1"...)
}

// Chunk0 is the chunk of column path in the first row group.
func (f *File) Chunk0(path string) *Chunk { return &f.Chunks[0][f.Column(path)] }

// ReplaceFooter returns data with its footer decoded, changed by edit and
// encoded again: for claims about offsets and lengths, which Bytes sets.
func ReplaceFooter(data []byte, edit func(*format.FileMetaData)) []byte {
	var proto thrift.CompactProtocol
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	var md format.FileMetaData
	if err := thrift.Unmarshal(&proto, data[len(data)-8-flen:len(data)-8], &md); err != nil {
		panic(err)
	}
	edit(&md)
	footer, err := thrift.Marshal(&proto, &md)
	if err != nil {
		panic(err)
	}
	out := append(bytes.Clone(data[:len(data)-8-flen]), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}
