package pqcheck

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/pqcheck/pqtest"
)

// row is a data file row: an id, a label, 784 bytes of pixels.
type row struct {
	ID     int64  `parquet:"id"`
	Label  int32  `parquet:"label,dict"`
	Pixels []byte `parquet:"pixels"`
}

// dataFile writes n rows with codec, in data pages of version v, in pages
// of about 8 KiB (several per chunk), with a page index.
func dataFile(t testing.TB, codec compress.Codec, v, n int) []byte {
	t.Helper()
	rows := make([]row, n)
	for i := range rows {
		px := make([]byte, 784)
		for j := range px {
			px[j] = byte(i*7 + j*j)
		}
		rows[i] = row{ID: int64(i), Label: int32(i % 10), Pixels: px}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.Compression(codec), parquet.PageBufferSize(8<<10), parquet.DataPageVersion(v))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// checkFile runs every check on data as a reader of the file would:
// ReadTail, then every chunk staged whole and every located page staged
// alone. It returns the first error, and fails the test if the checks
// allocated more than limit bytes.
func checkFile(t *testing.T, data []byte, limit uint64) error {
	t.Helper()
	var err error
	a := allocated(func() { err = checkAll(data) })
	if a > limit {
		t.Errorf("the checks allocated %d MiB", a>>20)
	}
	return err
}

func checkAll(data []byte) error {
	r := bytes.NewReader(data)
	_, _, f, err := ReadTail(r, int64(len(data)))
	if err != nil {
		return err
	}
	for i, rg := range f.Meta.RowGroups {
		for j, c := range rg.Columns {
			if _, err := f.StageChunk(r, i, j); err != nil {
				return err
			}
			if c.OffsetIndexOffset == 0 {
				continue
			}
			oi := new(format.OffsetIndex)
			var proto thrift.CompactProtocol
			if err := thrift.Unmarshal(&proto, data[c.OffsetIndexOffset:c.OffsetIndexOffset+int64(c.OffsetIndexLength)], oi); err != nil {
				return err
			}
			for _, l := range oi.PageLocations {
				page := data[l.Offset : l.Offset+int64(l.CompressedPageSize)]
				if _, err := f.StagePage(r, i, j, l.Offset, page, oi.PageLocations[0].Offset); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error of several lines: %q", err)
	}
}

// A footer of a few bytes claiming a list of 2^30 schema elements, row
// groups or column chunks fails, allocating nothing of the kind.
func TestFooterBombs(t *testing.T) {
	for what, want := range map[string]string{
		"schema":     "Parquet footer: Schema: a list claims 1073741824 elements in ",
		"row_groups": "Parquet footer: RowGroups: a list claims 1073741824 elements in ",
		"columns":    "Parquet footer: Columns: a list claims 1073741824 elements in ",
	} {
		t.Run(what, func(t *testing.T) {
			wantErr(t, checkFile(t, pqtest.FooterBomb(what, 1<<30), 1<<20), want)
		})
	}
}

// The decoded size counts: a footer of 600,000 empty column chunks is 600
// KB of Thrift but 320 MiB of []format.ColumnChunk.
func TestFooterDecodeBudget(t *testing.T) {
	var footer []byte
	footer = append(footer, 0x15, 0x02)                                       // version
	footer = append(footer, 0x19, 0x1c, 0x48, 4, 'r', 'o', 'o', 't', 0x00)    // schema: the root
	footer = append(footer, 0x16, 0x00)                                       // num_rows
	footer = append(footer, 0x19, 0x1c)                                       // row_groups: one
	footer = append(footer, pqtest.ListBomb(1, pqtest.Struct, 600_000, 0)...) // its columns
	footer = append(footer, make([]byte, 600_000)...)                         // each an empty struct
	footer = append(footer, 0x00, 0x00)
	data := []byte("PAR1")
	data = append(data, footer...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(footer)))
	data = append(data, "PAR1"...)
	wantErr(t, checkFile(t, data, 4<<20), "Parquet footer: Columns: a list of 600000 elements decodes to more than 256 MiB")
}

// reencode replaces the footer of data by one changed by edit.
func reencode(t *testing.T, data []byte, edit func(*format.FileMetaData)) []byte {
	t.Helper()
	return pqtest.ReplaceFooter(data, edit)
}

func thriftInt(v int32) thrift.Null[int32] { return thrift.New(v) }

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	b, err := thrift.Marshal(&proto, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The schema and row groups must be what parquet-go can build without
// allocating beyond the footer.
func TestFooterStructure(t *testing.T) {
	base := dataFile(t, &parquet.Snappy, 2, 300)
	if err := checkFile(t, base, 8<<20); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		edit func(*format.FileMetaData)
		want string
	}{
		"children beyond the schema": {func(m *format.FileMetaData) { m.Schema[0].NumChildren.V = 1000 }, "schema: element \"row\" claims 1000 children, 3 elements follow"},
		"negative children":          {func(m *format.FileMetaData) { m.Schema[0].NumChildren.V = -1 }, "claims -1 children"},
		"elements after the tree":    {func(m *format.FileMetaData) { m.Schema[0].NumChildren.V = 2 }, "1 elements after the end of the tree"},
		"a leaf with children": {func(m *format.FileMetaData) {
			m.Schema[1].NumChildren = thriftInt(1)
		}, "leaf \"id\" claims 1 children"},
		"columns": {func(m *format.FileMetaData) {
			m.RowGroups[0].Columns = m.RowGroups[0].Columns[:2]
		}, "row group 0 has 2 column chunks, the schema 3 leaf columns"},
		"rows":          {func(m *format.FileMetaData) { m.NumRows = 1 << 40 }, "the row groups hold 300 rows, the file claims 1099511627776"},
		"negative rows": {func(m *format.FileMetaData) { m.RowGroups[0].NumRows = -5 }, "row group 0 claims -5 rows"},
		"chunk past the data": {func(m *format.FileMetaData) {
			m.RowGroups[0].Columns[2].MetaData.TotalCompressedSize = math.MaxInt32
		}, "column pixels: a chunk of 2147483647 bytes at offset"},
		"chunk before the magic": {func(m *format.FileMetaData) {
			m.RowGroups[0].Columns[0].MetaData.DataPageOffset = 0
		}, "column id: a chunk of"},
		"offset index past the data": {func(m *format.FileMetaData) {
			m.RowGroups[0].Columns[2].OffsetIndexLength = math.MaxInt32
		}, "column pixels: a offset index of 2147483647 bytes at offset"},
		"column index in the data": {func(m *format.FileMetaData) {
			m.RowGroups[0].Columns[1].ColumnIndexOffset = 4
		}, "column label: a column index at offset 4, outside the page index"},
		"sorting column": {func(m *format.FileMetaData) {
			m.RowGroups[0].SortingColumns = []format.SortingColumn{{ColumnIdx: 7}}
		}, "row group 0 is sorted by column 7 of 3"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wantErr(t, checkFile(t, reencode(t, base, c.edit), 8<<20), "Parquet footer: ", c.want)
		})
	}
}

// A schema nested deeper than 64 levels is refused: parquet-go gives each
// column its whole path, depth² strings for a chain.
func TestFooterDeepSchema(t *testing.T) {
	base := dataFile(t, &parquet.Snappy, 2, 10)
	data := reencode(t, base, func(m *format.FileMetaData) {
		// A chain of 100 groups above the first column.
		chain := make([]format.SchemaElement, 100)
		for i := range chain {
			chain[i] = format.SchemaElement{Name: "g", NumChildren: thriftInt(1)}
		}
		chain[0].NumChildren = thriftInt(3)
		s := append([]format.SchemaElement{m.Schema[0]}, chain...)
		s[0].NumChildren = thriftInt(1)
		m.Schema = append(s, m.Schema[1:]...)
	})
	wantErr(t, checkFile(t, data, 8<<20), "Parquet footer: schema: nested more than 64 levels deep")
}

// A page index region claiming huge lists fails when the file is opened.
func TestPageIndexBombs(t *testing.T) {
	base := dataFile(t, &parquet.Snappy, 2, 300)
	for _, c := range []struct {
		name string
		edit func(*pqtest.Chunk)
		want string
	}{
		{"offset index", func(c *pqtest.Chunk) { c.RawOffsetIndex = pqtest.ListBomb(1, pqtest.Struct, 1<<30, 32) },
			"column pixels: offset index: PageLocations: a list claims 1073741824 elements in "},
		{"column index null pages", func(c *pqtest.Chunk) { c.ColumnIndex = pqtest.ListBomb(1, pqtest.Bool, 1<<30, 32) },
			"column pixels: column index: NullPages: a list claims 1073741824 elements in "},
		{"column index min values", func(c *pqtest.Chunk) { c.ColumnIndex = pqtest.ColumnIndexBomb(math.MaxInt32, 32) },
			"column pixels: column index: MinValues: a list claims 2147483647 elements in "},
		{"page outside its chunk", func(c *pqtest.Chunk) {
			c.RawOffsetIndex = marshal(t, &format.OffsetIndex{PageLocations: []format.PageLocation{{Offset: 4, CompressedPageSize: math.MaxInt32}}})
		}, "column pixels: offset index: page 0 of 2147483647 bytes at offset 4 lies outside its chunk"},
		{"rows out of order", func(c *pqtest.Chunk) {
			oi := *c.OffsetIndex
			oi.PageLocations = append([]format.PageLocation(nil), oi.PageLocations...)
			oi.PageLocations[1].FirstRowIndex = 1 << 40
			c.OffsetIndex = &oi
		}, "column pixels: offset index: page 1 starts at row 1099511627776"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := pqtest.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(f.Chunk0("pixels"))
			wantErr(t, checkFile(t, f.Bytes(), 8<<20), c.want)
		})
	}
}

// A page claiming 2 GiB compressed or uncompressed, a snappy stream
// claiming 4 GiB, 2^31 values, more levels than bytes: each fails before
// parquet-go decodes the page, whether the page is read through the
// offset index or its chunk whole, allocating nothing of the kind. The
// page rewritten without a hostile claim passes (the rewriting is sound).
func TestPageClaims(t *testing.T) {
	for _, v := range []int{1, 2} {
		base := dataFile(t, &parquet.Snappy, v, 300)
		same := func(*pqtest.Page) {}
		cases := []struct {
			name, column string
			edit         func(*pqtest.Page)
			want         string
		}{
			{"rewritten as it was", "pixels", same, ""},
			{"compressed size", "pixels", func(p *pqtest.Page) { p.Header.CompressedPageSize = math.MaxInt32 },
				"column pixels: a page claims 2147483647 bytes, "},
			{"uncompressed size", "pixels", func(p *pqtest.Page) { p.Header.UncompressedPageSize = math.MaxInt32 },
				" bytes claims 2147483647 uncompressed"},
			{"snappy length", "pixels", func(p *pqtest.Page) {
				levels := 0
				if h := p.Header.DataPageHeaderV2; h.Valid {
					levels = int(h.V.DefinitionLevelsByteLength + h.V.RepetitionLevelsByteLength)
				}
				_, k := binary.Uvarint(p.Body[levels:])
				p.Body = append(append(bytes.Clone(p.Body[:levels]), binary.AppendUvarint(nil, math.MaxUint32)...), p.Body[levels+k:]...)
				p.Header.CompressedPageSize = int32(len(p.Body))
				p.Header.CRC = 0
			}, "column pixels: a snappy page claims 4294967295 bytes, its header "},
			{"values", "pixels", func(p *pqtest.Page) {
				if p.Header.DataPageHeader.Valid {
					p.Header.DataPageHeader.V.NumValues = math.MaxInt32
				} else {
					p.Header.DataPageHeaderV2.V.NumValues = math.MaxInt32
				}
			}, "column pixels: a page claims 2147483647 values"},
			{"values beyond the rows", "id", func(p *pqtest.Page) {
				if p.Header.DataPageHeader.Valid {
					p.Header.DataPageHeader.V.NumValues = 301
				} else {
					p.Header.DataPageHeaderV2.V.NumValues = 301
				}
			}, "column id: a page claims 301 values"},
		}
		if v == 2 {
			cases = append(cases, struct {
				name, column string
				edit         func(*pqtest.Page)
				want         string
			}{"levels", "pixels", func(p *pqtest.Page) {
				p.Header.DataPageHeaderV2.V.DefinitionLevelsByteLength = math.MaxInt32
			}, "column pixels: a page of "})
		}
		for _, c := range cases {
			for _, strip := range []bool{false, true} {
				name := c.name
				if strip {
					name += " without a page index"
				}
				t.Run("v"+string(rune('0'+v))+"/"+name, func(t *testing.T) {
					f, err := pqtest.Parse(base)
					if err != nil {
						t.Fatal(err)
					}
					if strip {
						f.StripPageIndex()
					}
					k := 1 // the second page of pixels; id has one
					if c.column == "id" {
						k = 0
					}
					c.edit(f.Page(0, c.column, k))
					err = checkFile(t, f.Bytes(), 16<<20)
					if c.want == "" {
						if err != nil {
							t.Fatal(err)
						}
						return
					}
					wantErr(t, err, c.want)
				})
			}
		}
	}
}

// A dictionary page claiming more values than its bytes can hold fails,
// also when only a data page is read (it needs the dictionary).
func TestDictionaryClaims(t *testing.T) {
	f, err := pqtest.Parse(dataFile(t, &parquet.Snappy, 2, 300))
	if err != nil {
		t.Fatal(err)
	}
	f.Page(0, "label", -1).Header.DictionaryPageHeader.V.NumValues = math.MaxInt32
	data := f.Bytes()
	wantErr(t, checkFile(t, data, 8<<20), "column label: a page claims 2147483647 values")
	// Through the offset index: a data page of the column.
	r := bytes.NewReader(data)
	_, _, pf, err := ReadTail(r, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := pqtest.Parse(data)
	col := g.Column("label")
	l := g.Chunks[0][col].OffsetIndex.PageLocations[0]
	_, err = pf.StagePage(r, 0, col, l.Offset, data[l.Offset:l.Offset+int64(l.CompressedPageSize)], l.Offset)
	wantErr(t, err, "column label: a page claims 2147483647 values")
}

// Codecs: each real page decodes (TestRealFilesPass covers snappy and zstd
// of other writers); a stream that expands beyond its page's claimed size,
// or claims to, and a damaged lz4 block (parquet-go's lz4 doubles its
// buffer forever on one) fail.
func TestCodecs(t *testing.T) {
	zeros := make([]byte, 64<<20)
	gz := func() []byte {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		w.Write(zeros)
		w.Close()
		return b.Bytes()
	}
	br := func() []byte {
		var b bytes.Buffer
		w := brotli.NewWriterLevel(&b, 1)
		w.Write(zeros)
		w.Close()
		return b.Bytes()
	}
	// A zstd frame claiming 2 GiB of content, holding none.
	zstdFCS := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, binary.LittleEndian.AppendUint64(nil, 2<<30)...)
	zstdFCS = append(zstdFCS, 0x01, 0x00, 0x00) // last block, raw, empty
	// A zstd frame of RLE blocks of 128 KiB each, 4 bytes each: 1 GiB.
	zstdRLE := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58} // no FCS, window 128 MiB
	for i := 0; i < 8192; i++ {
		last := 0
		if i == 8191 {
			last = 1
		}
		h := uint32(128<<10)<<3 | 1<<1 | uint32(last)
		zstdRLE = append(zstdRLE, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	for _, c := range []struct {
		name  string
		codec compress.Codec
		bomb  []byte
		want  string
	}{
		{"gzip", &parquet.Gzip, gz(), "column pixels: a gzip page decodes to more than its "},
		{"brotli", &parquet.Brotli, br(), "column pixels: a brotli page decodes to more than its "},
		{"zstd content size", &parquet.Zstd, zstdFCS, "column pixels: a zstd page does not decode to at most its "},
		{"zstd blocks", &parquet.Zstd, zstdRLE, "column pixels: a zstd page does not decode to at most its "},
		{"lz4 damaged", &parquet.Lz4Raw, []byte{0x10, 'a', 0x05, 0x00}, "column pixels: an lz4 page does not decode to at most its "},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := dataFile(t, c.codec, 1, 300)
			if err := checkFile(t, base, 64<<20); err != nil {
				t.Fatalf("the file as written: %v", err)
			}
			f, err := pqtest.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			p := f.Page(0, "pixels", 1)
			p.Body, p.Header.CompressedPageSize, p.Header.CRC = c.bomb, int32(len(c.bomb)), 0
			wantErr(t, checkFile(t, f.Bytes(), 64<<20), c.want)
		})
	}
}

// Staged serves reads from its ranges, a short read at a range's end,
// and fails reads elsewhere (or passes them on to Rest).
func TestStaged(t *testing.T) {
	s := &Staged{}
	s.Add(100, []byte("abcdef"))
	s.Add(10, []byte("xyz"))
	p := make([]byte, 4)
	if n, err := s.ReadAt(p, 101); n != 4 || err != nil || string(p) != "bcde" {
		t.Errorf("inside: %d %v %q", n, err, p)
	}
	if n, err := s.ReadAt(p, 104); n != 2 || err != nil || string(p[:2]) != "ef" {
		t.Errorf("at the end: %d %v %q", n, err, p[:n])
	}
	if n, err := s.ReadAt(p, 12); n != 1 || err != nil || p[0] != 'z' {
		t.Errorf("second range: %d %v", n, err)
	}
	for _, off := range []int64{0, 13, 50, 106, 1 << 40} {
		if n, err := s.ReadAt(p, off); err == nil {
			t.Errorf("read at %d outside the ranges: %d bytes", off, n)
		}
	}
	s.Rest = bytes.NewReader(make([]byte, 200))
	if n, err := s.ReadAt(p, 50); n != 4 || err != nil {
		t.Errorf("Rest: %d %v", n, err)
	}
	if n, err := s.ReadAt(p, 104); n != 4 || err != nil || !bytes.Equal(p, make([]byte, 4)) {
		t.Errorf("across a range's end with Rest: %d %v %q", n, err, p)
	}
}

// ReadTail reads at most three times, each sized by the file and the
// limits: a footer claiming more than the file fails without a read of
// that size.
func TestReadTail(t *testing.T) {
	if _, _, _, err := ReadTail(bytes.NewReader(make([]byte, 100)), 100); err == nil {
		t.Error("a file without the magic was opened")
	}
	if _, _, _, err := ReadTail(bytes.NewReader(make([]byte, 5)), 5); err == nil {
		t.Error("a 5-byte file was opened")
	}
	bad := append(make([]byte, 100), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1')
	var err error
	if a := allocated(func() { _, _, _, err = ReadTail(bytes.NewReader(bad), int64(len(bad))) }); a > 1<<20 {
		t.Errorf("allocated %d MiB", a>>20)
	}
	wantErr(t, err, "Parquet footer length 2147483647 does not fit in a 108-byte file")
	// A large footer (over the first read) takes a second read.
	base := dataFile(t, &parquet.Snappy, 2, 300)
	f, _ := pqtest.Parse(base)
	f.Meta.KeyValueMetadata = []format.KeyValue{{Key: "big", Value: strings.Repeat("x", 100<<10)}}
	data := f.Bytes()
	cr := &countingReaderAt{r: bytes.NewReader(data)}
	tail, off, _, err := ReadTail(cr, int64(len(data)))
	if err != nil || cr.n > 3 || off+int64(len(tail)) != int64(len(data)) {
		t.Errorf("large footer: %v, %d reads", err, cr.n)
	}
}

type countingReaderAt struct {
	r *bytes.Reader
	n int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	return c.r.ReadAt(p, off)
}
