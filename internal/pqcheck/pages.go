package pqcheck

import (
	"fmt"
	"reflect"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Pages is what CheckPages found in the bytes it checked.
type Pages struct {
	Count      int  // pages
	Dictionary bool // a dictionary page is among them
	DictPages  bool // a data page among them is dictionary-encoded: decoding it reads the chunk's dictionary page
}

// CheckPages checks the pages in b, the bytes [off, off+len(b)) of column
// chunk col of row group rg, which must be whole pages of the chunk: the
// whole chunk, a page the offset index locates, or the dictionary page.
// Before parquet-go decodes a page it allocates its compressed size, its
// uncompressed size, and levels, offsets and values for each value it
// claims; so every page must have:
//
//   - a header that is a Thrift struct whose sizes pass walkThrift;
//   - a compressed size within the bytes left in b;
//   - an uncompressed size within MaxPageBytes and MaxPageExpansion times
//     the compressed size;
//   - a value count within MaxPageValues, maxValues when positive, and the
//     row group's rows for a column that is not repeated (a dictionary:
//     8 values a byte, bit-packed booleans being the densest);
//   - compressed bytes that decode to at most the uncompressed size (see
//     checkBody).
func (f *File) CheckPages(rg, col int, off int64, b []byte, maxValues int64) (Pages, error) {
	var out Pages
	if rg < 0 || rg >= len(f.Meta.RowGroups) || col < 0 || col >= len(f.leaves) {
		return out, fmt.Errorf("no column chunk %d of row group %d", col, rg)
	}
	name := f.leaves[col].path
	start, size := f.ChunkRange(rg, col)
	if off < start || int64(len(b)) > start+size-off {
		return out, fmt.Errorf("column %s: bytes %d..%d are outside its chunk %d..%d", name, off, off+int64(len(b)), start, start+size)
	}
	m := &f.Meta.RowGroups[rg].Columns[col].MetaData
	limit := f.valueLimit(rg, col, maxValues)
	for pos := 0; pos < len(b); {
		h, n, err := PageHeader(b[pos:])
		if err != nil {
			return out, fmt.Errorf("column %s: %w", name, err)
		}
		pos += n
		if err := checkPage(h, b[pos:], m.Codec, limit, &out); err != nil {
			return out, fmt.Errorf("column %s: %w", name, err)
		}
		pos += int(h.CompressedPageSize)
		out.Count++
	}
	return out, nil
}

// valueLimit is the most values a page of column chunk col of row group
// rg may claim.
func (f *File) valueLimit(rg, col int, maxValues int64) int64 {
	limit := int64(MaxPageValues)
	if maxValues > 0 {
		limit = min(limit, maxValues)
	}
	if !f.leaves[col].repeated {
		limit = min(limit, f.Meta.RowGroups[rg].NumRows)
	}
	return limit
}

// checkPage checks one page: its header h, and body, the bytes after the
// header (the page's compressed bytes, then whatever follows it).
func checkPage(h *format.PageHeader, body []byte, codec format.CompressionCodec, limit int64, out *Pages) error {
	levels, compressed, err := checkHeader(h, int64(len(body)), limit, out)
	if err != nil {
		return err
	}
	if compressed {
		return checkBody(codec, body[levels:h.CompressedPageSize], int64(h.UncompressedPageSize))
	}
	return nil
}

// PageHeader decodes the page header at the start of b, within the bounds
// CheckPages applies, and returns it and its length in bytes.
func PageHeader(b []byte) (*format.PageHeader, int, error) {
	n, err := walkThrift(b, reflect.TypeFor[format.PageHeader](), MaxDecodeBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("page header: %w", err)
	}
	var h format.PageHeader
	var proto thrift.CompactProtocol
	if err := thrift.Unmarshal(&proto, b[:n], &h); err != nil {
		return nil, 0, fmt.Errorf("page header: %w", err)
	}
	return &h, n, nil
}

// CheckPageHeader checks a page's header as CheckPages does, for a page
// of column chunk col of row group rg whose compressed bytes are decoded
// as a stream (a page too large to hold in memory): its decoder must then
// stop at the uncompressed size the header claims. It returns the bytes
// of levels stored uncompressed before the compressed bytes (a v2 data
// page's), and whether the rest is compressed.
func (f *File) CheckPageHeader(rg, col int, h *format.PageHeader, maxValues int64) (levels int64, compressed bool, err error) {
	if rg < 0 || rg >= len(f.Meta.RowGroups) || col < 0 || col >= len(f.leaves) {
		return 0, false, fmt.Errorf("no column chunk %d of row group %d", col, rg)
	}
	_, size := f.ChunkRange(rg, col)
	limit := f.valueLimit(rg, col, maxValues)
	var out Pages
	levels, compressed, err = checkHeader(h, size, limit, &out)
	if err != nil {
		return 0, false, fmt.Errorf("column %s: %w", f.leaves[col].path, err)
	}
	return levels, compressed, nil
}

// checkHeader checks a page header h, whose page has at most avail bytes
// after its header, and returns the bytes of uncompressed levels before
// its compressed bytes, and whether those are compressed.
func checkHeader(h *format.PageHeader, avail, limit int64, out *Pages) (levels int64, compressed bool, err error) {
	comp, uncomp := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if comp < 0 || comp > avail {
		return 0, false, fmt.Errorf("a page claims %d bytes, %d are left in its chunk", comp, avail)
	}
	if uncomp < 0 || uncomp > MaxPageBytes || uncomp > MaxPageExpansion*comp+1<<20 {
		return 0, false, fmt.Errorf("a page of %d bytes claims %d uncompressed", comp, uncomp)
	}
	var values int64
	compressed = true
	var enc format.Encoding
	switch h.Type {
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return 0, false, fmt.Errorf("a data page without its header")
		}
		values, enc = int64(h.DataPageHeader.V.NumValues), h.DataPageHeader.V.Encoding
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return 0, false, fmt.Errorf("a data page without its header")
		}
		v2 := &h.DataPageHeaderV2.V
		values, enc = int64(v2.NumValues), v2.Encoding
		if v2.RepetitionLevelsByteLength < 0 || v2.DefinitionLevelsByteLength < 0 {
			return 0, false, fmt.Errorf("a page claims %d and %d bytes of levels", v2.RepetitionLevelsByteLength, v2.DefinitionLevelsByteLength)
		}
		levels = int64(v2.RepetitionLevelsByteLength) + int64(v2.DefinitionLevelsByteLength)
		if levels > comp {
			return 0, false, fmt.Errorf("a page of %d bytes claims %d bytes of levels", comp, levels)
		}
		if v2.NumNulls < 0 || v2.NumRows < 0 || int64(v2.NumNulls) > values || int64(v2.NumRows) > values {
			return 0, false, fmt.Errorf("a page of %d values claims %d nulls and %d rows", values, v2.NumNulls, v2.NumRows)
		}
		compressed = !v2.IsCompressed.Valid || v2.IsCompressed.V
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return 0, false, fmt.Errorf("a dictionary page without its header")
		}
		values = int64(h.DictionaryPageHeader.V.NumValues)
		limit = min(int64(MaxPageValues), 8*uncomp+8)
		out.Dictionary = true
	default:
		// parquet-go refuses other page types (index pages) when it meets
		// them; their sizes are checked above.
	}
	if values < 0 || values > limit {
		return 0, false, fmt.Errorf("a page claims %d values", values)
	}
	if enc == format.RLEDictionary || enc == format.PlainDictionary {
		out.DictPages = true
	}
	return levels, compressed, nil
}
