package page

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck/pqtest"
	"github.com/deltafs/deltafs/storage"
)

// A Fetcher reads no byte it has not checked: the tail at every open
// (also a cached one), each page (with its dictionary page) or, without an
// offset index, each chunk before parquet-go decodes it. A hostile claim
// fails the values read from it with an error naming the claim, and
// allocates nothing of what it claims; the other pages of the file read.

// hostileRow has a dictionary-encoded data column (few distinct values),
// so that decoding a page needs the chunk's dictionary page.
type hostileRow struct {
	ID   int64  `parquet:"id"`
	Data []byte `parquet:"data,dict"`
}

// hostileFile writes 20,000 rows in pages of about 4 KiB (several), and
// returns its bytes and rows.
func hostileFile(t *testing.T) ([]byte, []hostileRow) {
	t.Helper()
	rows := make([]hostileRow, 20000)
	for i := range rows {
		rows[i] = hostileRow{ID: int64(i), Data: bytes.Repeat([]byte{byte(i % 211)}, 100+i%211)}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[hostileRow](&buf, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(4<<10))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), rows
}

// fetcherOn writes data as a file and returns a fetcher over it, the
// file's reference (identified) and the store.
func fetcherOn(t *testing.T, data []byte, cache Cache) (*Fetcher, FileRef, *countedStore) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := &countedStore{Storage: st}
	p := NewFetcher(cs, Options{Cache: cache})
	ref, err := p.Identify(context.Background(), FileRef{Path: "f.parquet", Key: "f.parquet", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	return p, ref, cs
}

func allocatedBy(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// The pages read through the offset index are the page's bytes and, for
// a dictionary-encoded page, the dictionary page's: each read once per
// page decoded, both checked.
func TestPageFetcherDictionaryPages(t *testing.T) {
	data, rows := hostileFile(t)
	blobs := NewMemCache(64 << 20)
	p, ref, cs := fetcherOn(t, data, blobs)
	// The tail opened by another process (a cached tail): the pages are
	// all read from storage, none from the bytes a tail read took in.
	if _, err := NewFetcher(cs.Storage, Options{Cache: blobs}).NumRows(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	f, _ := pqtest.Parse(data)
	locs := f.Chunk0("data").OffsetIndex.PageLocations
	if len(locs) < 5 {
		t.Fatalf("%d pages", len(locs))
	}
	for _, k := range []int{0, 2, 4} {
		row := locs[k].FirstRowIndex + 1
		got, err := p.Value(context.Background(), ref, "data", row)
		if err != nil || !bytes.Equal(got, rows[row].Data) {
			t.Fatalf("row %d: %v", row, err)
		}
	}
	// Per page its bytes and its dictionary's (the tail is cached).
	if n := cs.reads.Load(); n != 3*2 {
		t.Errorf("%d storage reads %v, want 6 (page and dictionary for each of 3 pages)", n, cs.ranges)
	}
}

func TestPageFetcherHostilePages(t *testing.T) {
	orig, rows := hostileFile(t)
	for _, c := range []struct {
		name string
		edit func(*pqtest.File)
		want string
	}{
		{"compressed size", func(f *pqtest.File) { f.Page(0, "data", 3).Header.CompressedPageSize = math.MaxInt32 },
			"column data: a page claims 2147483647 bytes, "},
		{"uncompressed size", func(f *pqtest.File) { f.Page(0, "data", 3).Header.UncompressedPageSize = math.MaxInt32 },
			" bytes claims 2147483647 uncompressed"},
		{"values", func(f *pqtest.File) { f.Page(0, "data", 3).Header.DataPageHeaderV2.V.NumValues = math.MaxInt32 },
			"column data: a page claims 2147483647 values"},
		{"dictionary values", func(f *pqtest.File) {
			f.Page(0, "data", -1).Header.DictionaryPageHeader.V.NumValues = math.MaxInt32
		}, "column data: a page claims 2147483647 values"},
	} {
		for _, strip := range []bool{false, true} {
			name := c.name
			if strip {
				name += " without a page index"
			}
			t.Run(name, func(t *testing.T) {
				f, err := pqtest.Parse(orig)
				if err != nil {
					t.Fatal(err)
				}
				if strip {
					f.StripPageIndex()
				}
				c.edit(f)
				data := f.Bytes()
				p, ref, _ := fetcherOn(t, data, NewMemCache(64<<20))
				g, _ := pqtest.Parse(orig)
				first := g.Chunk0("data").OffsetIndex.PageLocations[3].FirstRowIndex
				var err2 error
				if a := allocatedBy(func() { _, err2 = p.Value(context.Background(), ref, "data", first) }); a > 16<<20 {
					t.Errorf("allocated %d MiB", a>>20)
				}
				if err2 == nil || !strings.Contains(err2.Error(), c.want) {
					t.Fatalf("row %d: %v, want an error with %q", first, err2, c.want)
				}
				// With an offset index, a page with nothing hostile reads
				// (unless it needs the hostile dictionary).
				if !strip && c.name != "dictionary values" {
					if got, err := p.Value(context.Background(), ref, "data", 0); err != nil || !bytes.Equal(got, rows[0].Data) {
						t.Fatalf("row 0 of a sound page: %v", err)
					}
				}
			})
		}
	}
}

// A hostile tail in the cache (a disk cache written by another version,
// or damaged) is checked like one just read: parquet-go never parses it.
func TestPageFetcherCachedTailChecked(t *testing.T) {
	data, _ := hostileFile(t)
	cache := NewMemCache(64 << 20)
	p, ref, _ := fetcherOn(t, data, cache)
	bomb := pqtest.FooterBomb("schema", 1<<30)
	blob := append(make([]byte, 8), bomb...)
	// The bomb stands for the last len(bomb) bytes of the file.
	off := uint64(len(data) - len(bomb))
	for i := range 8 {
		blob[i] = byte(off >> (8 * i))
	}
	if _, err := cache.Get(context.Background(), tailKey(ref), func(context.Context) ([]byte, error) { return blob, nil }); err != nil {
		t.Fatal(err)
	}
	var err error
	if a := allocatedBy(func() { _, err = p.Value(context.Background(), ref, "data", 0) }); a > 16<<20 {
		t.Errorf("allocated %d MiB", a>>20)
	}
	if err == nil || !strings.Contains(err.Error(), "Parquet footer: Schema: a list claims 1073741824 elements") {
		t.Fatalf("a hostile cached tail: %v", err)
	}
}
