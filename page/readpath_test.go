package page

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/storage"
)

// countedStore counts the reads reaching a real local store, and the most
// reads in flight at once; delay slows each read down so that overlapping
// reads show.
type countedStore struct {
	storage.Storage
	delay                 time.Duration
	reads, bytes          atomic.Int64
	inFlight, maxInFlight atomic.Int64
	mu                    sync.Mutex
	ranges                [][2]int64 // guarded by mu: (offset, length) of each read
}

func (c *countedStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	n := c.inFlight.Add(1)
	for {
		m := c.maxInFlight.Load()
		if n <= m || c.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(c.delay)
	got, err := c.Storage.ReadAt(ctx, key, p, off)
	c.inFlight.Add(-1)
	c.reads.Add(1)
	c.bytes.Add(int64(got))
	c.mu.Lock()
	c.ranges = append(c.ranges, [2]int64{off, int64(len(p))})
	c.mu.Unlock()
	return got, err
}

// writePixels writes a Parquet file of rows rows with a data column of
// 784-byte values in pages of about 8 KiB (a page index is written), and
// returns its store, reference, rows and the column's offset index.
func writePixels(t *testing.T, rows int) (storage.Storage, FileRef, []pqRow, parquet.OffsetIndex) {
	t.Helper()
	dir := t.TempDir()
	var data []pqRow
	for i := range rows {
		d := make([]byte, 784)
		for j := range d {
			d[j] = byte(i*7 + j*j) // poorly compressible
		}
		data = append(data, pqRow{ID: int64(i), Data: d})
	}
	path := filepath.Join(dir, "part-0.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqRow](f, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(8<<10))
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	oi, err := pf.RowGroups()[0].ColumnChunks()[1].OffsetIndex()
	if err != nil || oi.NumPages() < 10 {
		t.Fatalf("offset index: %v (%d pages)", err, oi.NumPages())
	}
	f.Close()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, FileRef{Path: "part-0.parquet", Key: "part-0.parquet", Size: info.Size()}, data, oi
}

// storagePages is what reading every page of a file of size bytes costs
// the store after its tail was read: the read of the tail (tailGuess
// bytes at the end) took in the pages after its start, which are not read
// again, and of a page it took in part only the part before it is read.
func storagePages(oi parquet.OffsetIndex, size int64) (reads int64, bytes int64) {
	guess := max(0, size-tailGuess)
	for j := range oi.NumPages() {
		if off := oi.Offset(j); off < guess {
			reads++
			bytes += min(off+oi.CompressedPageSize(j), guess) - off
		}
	}
	return reads, bytes
}

// pageOf is the page of the offset index holding row.
func pageOf(oi parquet.OffsetIndex, row int64) int {
	return sort.Search(oi.NumPages(), func(i int) bool { return oi.FirstRowIndex(i) > row }) - 1
}

// TestPageFetcherReadsPerSample: a random sample of a cold file costs one
// storage read for the file's tail (footer and page index) and one for its
// page — exactly the page's bytes from the offset index; a sample of
// another page costs one read more; a fetcher sharing the cache opens the
// file and reads the page without any storage read.
func TestPageFetcherReadsPerSample(t *testing.T) {
	st, ref, rows, oi := writePixels(t, 2000)
	cs := &countedStore{Storage: st}
	blobs := NewMemCache(64 << 20)
	p := NewFetcher(cs, Options{Cache: blobs})
	ctx := context.Background()
	const row = 1234
	got, err := p.Value(ctx, ref, "data", row)
	if err != nil || !bytes.Equal(got, rows[row].Data) {
		t.Fatalf("row %d: %v", row, err)
	}
	pg := pageOf(oi, row)
	if n := cs.reads.Load(); n != 2 {
		t.Fatalf("one cold sample took %d storage reads %v, want 2 (tail, page)", n, cs.ranges)
	}
	if r := cs.ranges[1]; r[0] != oi.Offset(pg) || r[1] != oi.CompressedPageSize(pg) {
		t.Errorf("page read %v, want exactly page %d: offset %d, %d bytes", r, pg, oi.Offset(pg), oi.CompressedPageSize(pg))
	}
	tail := cs.bytes.Load() - oi.CompressedPageSize(pg)
	if tail > tailGuess || cs.ranges[0][0]+cs.ranges[0][1] != ref.Size {
		t.Errorf("tail read %v (%d bytes): want the end of the file, at most %d bytes", cs.ranges[0], tail, tailGuess)
	}
	// The cache keeps only the page index and footer of the tail.
	blob, err := blobs.Get(ctx, tailKey(ref), func(context.Context) ([]byte, error) { t.Fatal("tail not cached"); return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, off, _ := parseTail(blob); off <= oi.Offset(oi.NumPages()-1) {
		t.Errorf("cached tail starts at %d, inside the data pages (last page at %d)", off, oi.Offset(oi.NumPages()-1))
	}
	t.Logf("cold sample: %d bytes = page %d + tail %d", cs.bytes.Load(), oi.CompressedPageSize(pg), tail)

	// Same page: no read. Another page: one read of that page.
	if _, err := p.Value(ctx, ref, "data", oi.FirstRowIndex(pg)); err != nil || cs.reads.Load() != 2 {
		t.Errorf("same page: %v, %d reads", err, cs.reads.Load())
	}
	other := oi.FirstRowIndex(pg + 2)
	if got, err := p.Value(ctx, ref, "data", other); err != nil || !bytes.Equal(got, rows[other].Data) || cs.reads.Load() != 3 {
		t.Errorf("another page: %v, %d reads, want 3", err, cs.reads.Load())
	}

	// A new fetcher (a remount) with the cache's tail and pages: nothing read.
	p2 := NewFetcher(cs, Options{Cache: blobs})
	if got, err := p2.Value(ctx, ref, "data", row); err != nil || !bytes.Equal(got, rows[row].Data) || cs.reads.Load() != 3 {
		t.Errorf("cached tail and page: %v, %d reads, want still 3", err, cs.reads.Load())
	}
	if s := p2.Stats(); s.FilesOpened != 0 || s.PagesDecoded != 0 {
		t.Errorf("second fetcher stats %+v, want no opens or pages decoded", s)
	}
}

// TestReadTailErrors: what is not a Parquet file fails with a reason.
func TestReadTailErrors(t *testing.T) {
	if _, err := readTail(bytes.NewReader(make([]byte, 100)), 100); err == nil {
		t.Error("a file without the Parquet magic was opened")
	}
	if _, err := readTail(bytes.NewReader(make([]byte, 5)), 5); err == nil {
		t.Error("a 5-byte file was opened")
	}
	bad := append(make([]byte, 100), 0xff, 0xff, 0, 0, 'P', 'A', 'R', '1')
	if _, err := readTail(bytes.NewReader(bad), int64(len(bad))); err == nil {
		t.Error("a footer longer than the file was accepted")
	}
}

// prefetchCache is the two-tier cache (memory only) as a Cache with
// read-ahead, as the mount wires it.
type prefetchCache struct{ c *cache.Cache }

func (a prefetchCache) key(k Key) cache.Key { return cache.KeyIn("", k) }

func (a prefetchCache) Get(ctx context.Context, k Key, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	return a.c.Get(ctx, a.key(k), fetch)
}

func (a prefetchCache) Prefetch(k Key, size int64, fetch func(context.Context) ([]byte, error)) bool {
	return a.c.Prefetch(a.key(k), size, fetch)
}

// TestPageFetcherReadAhead: reading a file's samples in order hands the
// next pages to the cache's read-ahead, every page is still read and
// decoded once, and the concurrent reads stay within the read-ahead
// workers (plus the reader's own); a byte bound of one page drops the
// read-ahead beyond it.
func TestPageFetcherReadAhead(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers int
		bytes   int64
	}{{"bounded by workers", 2, 64 << 20}, {"bounded by bytes", 4, 1}} {
		t.Run(c.name, func(t *testing.T) {
			st, ref, rows, oi := writePixels(t, 3000)
			cs := &countedStore{Storage: st, delay: 3 * time.Millisecond}
			pc, err := cache.New(cache.Options{MemBytes: 64 << 20, PrefetchWorkers: c.workers, PrefetchBytes: c.bytes})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			p := NewFetcher(cs, Options{Cache: prefetchCache{pc}, ReadAhead: 4})
			ctx := context.Background()
			for i := range rows {
				got, err := p.Value(ctx, ref, "data", int64(i))
				if err != nil || !bytes.Equal(got, rows[i].Data) {
					t.Fatalf("row %d: %v", i, err)
				}
			}
			fs, cst := p.Stats(), pc.Stats()
			if fs.ReadAhead == 0 || cst.PrefetchQueued == 0 {
				t.Fatalf("sequential read: %d pages read ahead, %d queued", fs.ReadAhead, cst.PrefetchQueued)
			}
			if fs.ReadAhead > int64(oi.NumPages()-1) {
				t.Errorf("%d pages read ahead of %d: pages offered more than once", fs.ReadAhead, oi.NumPages())
			}
			// Every page is decoded once, and read once unless the tail's
			// read took it in.
			if reads, _ := storagePages(oi, ref.Size); fs.PagesDecoded != int64(oi.NumPages()) || cs.reads.Load() != reads+1 {
				t.Errorf("%d pages decoded, %d storage reads; want each of %d pages once, %d of them read, plus the tail", fs.PagesDecoded, cs.reads.Load(), oi.NumPages(), reads)
			}
			maxIn := cs.maxInFlight.Load()
			limit := int64(c.workers) + 1
			if c.bytes == 1 {
				limit = 2 // one read-ahead at a time, and the reader
				if cst.PrefetchDropped == 0 {
					t.Error("a one-byte read-ahead bound dropped nothing")
				}
			}
			if maxIn > limit {
				t.Errorf("%d storage reads at once, want at most %d", maxIn, limit)
			}
			if c.bytes > 1 && maxIn < 2 {
				t.Errorf("read-ahead never overlapped the reader (%d reads at once)", maxIn)
			}
			t.Logf("pages %d, read ahead %d, queued %d, dropped %d, shared %d, max in flight %d", oi.NumPages(), fs.ReadAhead, cst.PrefetchQueued, cst.PrefetchDropped, cst.Shared, maxIn)
		})
	}
}

// rangeStore serves ReadRanges as one request (as S3's store coalesces
// neighbouring ranges), counting requests and the ranges they carried.
type rangeStore struct {
	*countedStore
	rangeCalls, rangesRead, widest, rangeBytes atomic.Int64
}

func (r *rangeStore) ReadRanges(ctx context.Context, key string, rs []storage.Range) ([][]byte, error) {
	r.rangeCalls.Add(1)
	r.rangesRead.Add(int64(len(rs)))
	if n := int64(len(rs)); n > r.widest.Load() {
		r.widest.Store(n)
	}
	out := make([][]byte, len(rs))
	for i, g := range rs {
		b := make([]byte, g.Len)
		if _, err := r.countedStore.Storage.ReadAt(ctx, key, b, g.Off); err != nil {
			return nil, err
		}
		r.rangeBytes.Add(g.Len)
		out[i] = b
	}
	return out, nil
}

// TestPageFetcherCoalescesReadAhead: with a store that reads several ranges
// in one request, the pages of one read-ahead are fetched together: fewer
// requests than pages, each page still read once and served right.
func TestPageFetcherCoalescesReadAhead(t *testing.T) {
	st, ref, rows, oi := writePixels(t, 3000)
	rs := &rangeStore{countedStore: &countedStore{Storage: st, delay: time.Millisecond}}
	pc, err := cache.New(cache.Options{MemBytes: 64 << 20, PrefetchWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	p := NewFetcher(rs, Options{Cache: prefetchCache{pc}, ReadAhead: 4, Coalesce: true})
	ctx := context.Background()
	for i := range rows {
		got, err := p.Value(ctx, ref, "data", int64(i))
		if err != nil || !bytes.Equal(got, rows[i].Data) {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	requests := rs.reads.Load() + rs.rangeCalls.Load()
	pages := int64(oi.NumPages())
	if rs.widest.Load() < 2 || rs.rangesRead.Load() <= rs.rangeCalls.Load() || requests >= pages {
		t.Errorf("%d requests (%d single reads, %d range reads of %d ranges, widest %d) for %d pages: want range reads of several pages and fewer requests than pages",
			requests, rs.reads.Load(), rs.rangeCalls.Load(), rs.rangesRead.Load(), rs.widest.Load(), pages)
	}
	if s := p.Stats(); s.PagesDecoded != pages {
		t.Errorf("%d pages decoded, want %d", s.PagesDecoded, pages)
	}
	// Each page's bytes are read once (none the tail's read took in): a
	// reader that reaches a page whose read-ahead batch has not filled
	// its entry yet takes it from the batch.
	_, pageBytes := storagePages(oi, ref.Size)
	rs.mu.Lock()
	tail := rs.ranges[0][1] // the open's read of footer and page index
	rs.mu.Unlock()
	if got := rs.bytes.Load() + rs.rangeBytes.Load() - tail; got != pageBytes {
		t.Errorf("read %d bytes of pages, want each of the %d pages once, less what the tail's read took in: %d bytes", got, pages, pageBytes)
	}
	t.Logf("%d pages: %d single reads, %d range reads of %d ranges (widest %d)", pages, rs.reads.Load(), rs.rangeCalls.Load(), rs.rangesRead.Load(), rs.widest.Load())
}

// TestPageFetcherRandomSampleNoReadAhead: a sample in the middle of a page
// (random access) reads its page only; entering the next page at its first
// row (shard order) starts the read-ahead.
func TestPageFetcherRandomSampleNoReadAhead(t *testing.T) {
	st, ref, rows, oi := writePixels(t, 3000)
	cs := &countedStore{Storage: st}
	pc, err := cache.New(cache.Options{MemBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	p := NewFetcher(cs, Options{Cache: prefetchCache{pc}, ReadAhead: 4})
	ctx := context.Background()
	row := oi.FirstRowIndex(5) + 3
	if got, err := p.Value(ctx, ref, "data", row); err != nil || !bytes.Equal(got, rows[row].Data) {
		t.Fatalf("row %d: %v", row, err)
	}
	if s := p.Stats(); s.ReadAhead != 0 || cs.reads.Load() != 2 {
		t.Errorf("random sample: %d pages read ahead, %d storage reads; want 0 and 2", s.ReadAhead, cs.reads.Load())
	}
	row = oi.FirstRowIndex(6)
	if _, err := p.Value(ctx, ref, "data", row); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.ReadAhead == 0 {
		t.Error("entering a page at its first row read nothing ahead")
	}
}
