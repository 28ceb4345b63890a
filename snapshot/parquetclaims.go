package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Checking the sizes a Parquet log file claims before parquet-go trusts
// them. parquet-go allocates what a file claims before reading it: every
// list of the footer at its claimed length (a footer of 20 bytes that
// claims a list of 2^30 structs makes the Go runtime fail with "out of
// memory", which no recover catches), a page's buffer at its claimed
// compressed size, its decompressed buffer at its claimed uncompressed
// size (and snappy at the length its stream claims). checkFooterSizes
// walks the footer with parquet-go's own Thrift reader, allocating
// nothing, and refuses a list, set, map or string that claims more
// elements or bytes than are left (every element takes at least one
// byte), or nesting deeper than any Parquet footer has; checkChunkPages
// walks the page headers of a column chunk the same way and bounds each
// page's sizes by the chunk and the file.

// maxThriftDepth bounds struct and container nesting (a footer nests a few
// levels; schemas are flattened into a list).
const maxThriftDepth = 64

// checkFooterSizes checks every size claimed in a Thrift compact struct
// against the bytes of footer.
func checkFooterSizes(footer []byte) error {
	var proto thrift.CompactProtocol
	r := proto.NewReaderFromBytes(footer)
	w := thriftWalk{r: r, total: len(footer)}
	if err := w.structure(0); err != nil {
		return corruptf("Parquet footer: %v", err)
	}
	return nil
}

type thriftWalk struct {
	r     thrift.BytesReader
	total int
}

func (w thriftWalk) left() int { return w.total - w.r.BytesRead() }

func (w thriftWalk) structure(depth int) error {
	if depth > maxThriftDepth {
		return errors.New("nested too deeply")
	}
	for {
		f, err := w.r.ReadField()
		if err != nil {
			return err
		}
		if f.Type == thrift.STOP {
			return nil
		}
		if err := w.value(f.Type, true, depth+1); err != nil {
			return err
		}
	}
}

// value skips one value of type t; inField is true for a struct field,
// whose boolean value the compact protocol keeps in the field header.
func (w thriftWalk) value(t thrift.Type, inField bool, depth int) error {
	if depth > maxThriftDepth {
		return errors.New("nested too deeply")
	}
	var err error
	switch t {
	case thrift.TRUE, thrift.FALSE:
		if !inField {
			_, err = w.r.ReadBool()
		}
	case thrift.I8:
		_, err = w.r.ReadInt8()
	case thrift.I16:
		_, err = w.r.ReadInt16()
	case thrift.I32:
		_, err = w.r.ReadInt32()
	case thrift.I64:
		_, err = w.r.ReadInt64()
	case thrift.DOUBLE:
		_, err = w.r.ReadFloat64()
	case thrift.UUID:
		if _, err = w.r.ReadFloat64(); err == nil {
			_, err = w.r.ReadFloat64()
		}
	case thrift.BINARY:
		_, err = w.r.ReadBytes() // bounds-checked, no allocation
	case thrift.LIST, thrift.SET:
		var l thrift.List
		if l, err = w.r.ReadList(); err != nil {
			return err
		}
		if int(l.Size) < 0 || int(l.Size) > w.left() {
			return fmt.Errorf("a list claims %d elements in %d bytes", l.Size, w.left())
		}
		for i := 0; i < int(l.Size) && err == nil; i++ {
			err = w.value(l.Type, false, depth+1)
		}
	case thrift.MAP:
		var m thrift.Map
		if m, err = w.r.ReadMap(); err != nil {
			return err
		}
		if int(m.Size) < 0 || int(m.Size) > w.left()/2 {
			return fmt.Errorf("a map claims %d entries in %d bytes", m.Size, w.left())
		}
		for i := 0; i < int(m.Size) && err == nil; i++ {
			if err = w.value(m.Key, false, depth+1); err == nil {
				err = w.value(m.Value, false, depth+1)
			}
		}
	case thrift.STRUCT:
		err = w.structure(depth)
	default:
		err = fmt.Errorf("unknown Thrift type %d", t)
	}
	return err
}

// maxPageExpansion bounds a page's uncompressed size by its compressed
// size (writers aim at pages of about 1 MiB; no codec deltafs reads
// reaches this ratio on real checkpoint pages), and maxPageBytes bounds it
// outright.
const (
	maxPageExpansion = 1024
	maxPageBytes     = 1 << 30
)

// checkChunkPages checks the page headers of column chunk col of row group
// rg of the Parquet file data: every header a well-formed Thrift struct,
// every page inside the chunk, which is inside the file, an uncompressed
// size within maxPageExpansion of the compressed one (and maxPageBytes),
// a snappy stream that claims no more than the page's uncompressed size,
// and at most maxValues values per page.
func checkChunkPages(data []byte, md *format.FileMetaData, rg, col int, maxValues int64) error {
	if rg >= len(md.RowGroups) || col >= len(md.RowGroups[rg].Columns) {
		return corruptf("parquet column %d of row group %d is not in the footer", col, rg)
	}
	cm := &md.RowGroups[rg].Columns[col].MetaData
	start := cm.DataPageOffset
	if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
		start = cm.DictionaryPageOffset
	}
	size := int64(len(data))
	if start < 4 || cm.TotalCompressedSize < 0 || start > size || cm.TotalCompressedSize > size-start {
		return corruptf("parquet column %d: chunk of %d bytes at %d in a %d-byte file", col, cm.TotalCompressedSize, start, size)
	}
	chunk := data[start : start+cm.TotalCompressedSize]
	var proto thrift.CompactProtocol
	for pos := 0; pos < len(chunk); {
		r := proto.NewReaderFromBytes(chunk[pos:])
		if err := (thriftWalk{r: r, total: len(chunk) - pos}).structure(0); err != nil {
			return corruptf("parquet column %d: page header: %v", col, err)
		}
		n := r.BytesRead()
		var h format.PageHeader
		if err := thrift.Unmarshal(&proto, chunk[pos:pos+n], &h); err != nil {
			return corruptf("parquet column %d: page header: %v", col, err)
		}
		pos += n
		comp, uncomp := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
		if comp < 0 || comp > int64(len(chunk)-pos) {
			return corruptf("parquet column %d: a page claims %d bytes, %d are left in its chunk", col, comp, len(chunk)-pos)
		}
		if uncomp < 0 || uncomp > maxPageBytes || uncomp > maxPageExpansion*comp+1<<20 {
			return corruptf("parquet column %d: a page of %d bytes claims %d uncompressed", col, comp, uncomp)
		}
		var values int64
		levels := int64(0)
		switch {
		case h.DataPageHeader.Valid:
			values = int64(h.DataPageHeader.V.NumValues)
		case h.DataPageHeaderV2.Valid:
			v2 := h.DataPageHeaderV2.V
			values = int64(v2.NumValues)
			levels = int64(v2.RepetitionLevelsByteLength) + int64(v2.DefinitionLevelsByteLength)
			if levels < 0 || levels > comp {
				return corruptf("parquet column %d: a page of %d bytes claims %d bytes of levels", col, comp, levels)
			}
		case h.DictionaryPageHeader.Valid:
			values = int64(h.DictionaryPageHeader.V.NumValues)
		}
		if values < 0 || values > maxValues {
			return corruptf("parquet column %d: a page claims %d values", col, values)
		}
		if cm.Codec == format.Snappy && comp > levels {
			// The snappy block starts with its decoded length.
			if dlen, k := binary.Uvarint(chunk[pos+int(levels) : pos+int(comp)]); k <= 0 || dlen > uint64(uncomp) {
				return corruptf("parquet column %d: a snappy page claims %d bytes, its header %d", col, dlen, uncomp)
			}
		}
		pos += int(comp)
	}
	return nil
}
