package sample

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// What a node fetches for its shards: each data file its shards need at
// most once, byte for byte (its tail once, shared by the index build and
// the reads; the --image check without read-ahead; read-ahead never past
// the shard's last row). These tests count the bytes and reads reaching a
// real local store under a real Delta table written by package writer.

// keyedStore counts the reads of each object, with their ranges.
type keyedStore struct {
	storage.Storage
	mu     sync.Mutex
	reads  map[string][][2]int64 // key -> (offset, length) of each read
	logged bool                  // count the log's reads too
}

func (k *keyedStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	n, err := k.Storage.ReadAt(ctx, key, p, off)
	if k.logged || !strings.HasPrefix(key, "_delta_log/") {
		k.mu.Lock()
		k.reads[key] = append(k.reads[key], [2]int64{off, int64(n)})
		k.mu.Unlock()
	}
	return n, err
}

// take returns the reads so far, by key, and forgets them.
func (k *keyedStore) take() map[string][][2]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.reads
	k.reads = map[string][][2]int64{}
	return r
}

// syncPrefetch is a page.MemCache whose read-ahead runs at once, in the
// reader's call: what read-ahead fetches is counted before the read
// returns, without waiting for background fetches.
type syncPrefetch struct{ *page.MemCache }

var errNotCached = errors.New("not cached")

func (s syncPrefetch) Prefetch(key page.Key, _ int64, fetch func(ctx context.Context) ([]byte, error)) bool {
	// Declined when cached: a lookup whose fetch fails keeps nothing.
	if _, err := s.Get(context.Background(), key, func(context.Context) ([]byte, error) { return nil, errNotCached }); err == nil {
		return false
	}
	_, err := s.Get(context.Background(), key, fetch)
	return err == nil
}

// pixelTable writes a table of files data files of rows rows each (id,
// label 0..9, 784 poorly compressible pixel bytes), so that each file's
// pixel column has many pages, and opens it over a keyedStore.
func pixelTable(t *testing.T, files, rows int) (*keyedStore, *snapshot.Log, []*snapshot.AddFile) {
	t.Helper()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := &snapshot.StructType{Fields: []snapshot.StructField{
		{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "label", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "pixels", Type: &snapshot.PrimitiveType{Name: "binary"}},
	}}
	var all []writer.Row
	for i := range files * rows {
		px := make([]byte, 784)
		for j := range px {
			px[j] = byte(i*7 + j*j + j*i)
		}
		all = append(all, writer.Row{nil, int64(i % 10), px})
	}
	ctx := context.Background()
	if _, err := writer.Write(ctx, st, schema, writer.SliceRows(all), writer.Options{IDColumn: "id", RowsPerFile: rows}); err != nil {
		t.Fatal(err)
	}
	ks := &keyedStore{Storage: st, reads: map[string][][2]int64{}}
	tbl, err := snapshot.Open(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	fs := append([]*snapshot.AddFile(nil), snap.Files...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	if len(fs) != files {
		t.Fatalf("%d data files written, want %d", len(fs), files)
	}
	// One row group; files of 400 rows or more have several pages of
	// pixels.
	pf := openLocalParquet(t, filepath.Join(dir, fs[0].Path))
	if len(pf.RowGroups()) != 1 {
		t.Fatalf("%d row groups", len(pf.RowGroups()))
	}
	if oi := pixelIndex(t, pf); rows >= 400 && oi.NumPages() < 6 {
		t.Fatalf("%d pages of pixels per file, want several", oi.NumPages())
	}
	ks.take()
	return ks, tbl, fs
}

func openLocalParquet(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

func pixelIndex(t *testing.T, pf *parquet.File) parquet.OffsetIndex {
	t.Helper()
	col := pf.Root().Column("pixels")
	if col == nil {
		t.Fatal("no pixels column")
	}
	oi, err := pf.RowGroups()[0].ColumnChunks()[col.Index()].OffsetIndex()
	if err != nil {
		t.Fatal(err)
	}
	return oi
}

// pixelSamples is the sample layer as the mount wires it (ScanRows, a
// page.Fetcher with read-ahead) over the table, 28x28 images by label.
func pixelSamples(t *testing.T, ks *keyedStore, tbl *snapshot.Log, shards int, layout string) (*Samples, *page.Fetcher) {
	t.Helper()
	rows, err := ScanRows(tbl)
	if err != nil {
		t.Fatal(err)
	}
	pf := page.NewFetcher(ks, page.Options{Cache: syncPrefetch{page.NewMemCache(256 << 20)}, ReadAhead: 4})
	s, err := New(Options{Table: tbl, Rows: rows, Fetcher: pf, Cache: page.NewMemCache(64 << 20),
		Spec: Spec{Image: Image{H: 28, W: 28, C: 1}, ClassColumn: "label", Shards: shards, Layout: layout}})
	if err != nil {
		t.Fatal(err)
	}
	return s, pf
}

// readShard reads every sample of shard k, in random order (a shuffling
// loader) or in shard order.
func readShard(t *testing.T, v *Version, k int, shuffled bool) *Shard {
	t.Helper()
	ctx := context.Background()
	sh, err := v.Shard(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int, sh.Len())
	for i := range order {
		order[i] = i
	}
	if shuffled {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	buf := make([]byte, 1024)
	for _, pos := range order {
		if _, err := sh.ReadAt(ctx, pos, buf, 0); err != nil {
			t.Fatalf("shard %d sample %d: %v", k, pos, err)
		}
	}
	return sh
}

// readBytes is the bytes the reads rs read, a byte read twice counted
// twice.
func readBytes(rs [][2]int64) (n int64) {
	for _, r := range rs {
		n += r[1]
	}
	return n
}

// TestNodeReadsEachFileOnce: the two shards of one "node" (shards 0 and
// 1 of 4), indexed and read in random order, read each data file they
// need with one read of its tail — shared by the index build's scan and
// the page fetcher — and no byte of it twice: the data pages the tail's
// read took in are not read again.
func TestNodeReadsEachFileOnce(t *testing.T) {
	ks, tbl, files := pixelTable(t, 4, 800)
	s, _ := pixelSamples(t, ks, tbl, 4, LayoutContiguous)
	ctx := context.Background()
	v, err := s.Version(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, 1} {
		readShard(t, v, k, true)
	}
	reads := ks.take()
	for i, f := range files {
		rs := reads[f.Path]
		if i >= 2 {
			// Rows 1600.. are shards 2 and 3's: another node's files.
			if len(rs) > 0 {
				t.Errorf("file %d (another node's) read %d times: %v", i, len(rs), rs)
			}
			continue
		}
		tails := 0
		for _, r := range rs {
			if r[0]+r[1] == f.Size {
				tails++
			}
		}
		if tails != 1 {
			t.Errorf("file %d: its tail read %d times, want once (index and reads share it): %v", i, tails, rs)
		}
		if got := readBytes(rs); got > f.Size {
			t.Errorf("file %d: %d bytes read of its %d (%.2fx): %v", i, got, f.Size, float64(got)/float64(f.Size), rs)
		}
	}
}

// TestCheckImageReadsOnePage: the --image check reads the first data
// file's tail and the one page of the row it probes, no read-ahead (the
// pages after it may be another node's rows), and the shard reading that
// row later finds both in the cache: neither is read again.
func TestCheckImageReadsOnePage(t *testing.T) {
	ks, tbl, files := pixelTable(t, 2, 800)
	s, _ := pixelSamples(t, ks, tbl, 2, LayoutContiguous)
	ctx := context.Background()
	v, err := s.Version(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CheckImage(ctx); err != nil {
		t.Fatal(err)
	}
	reads := ks.take()
	f := files[0]
	oi := pixelIndex(t, openLocalParquet(t, filepath.Join(ks.Storage.Location(), f.Path)))
	var want [][2]int64
	if guess := max(0, f.Size-pqcheck.TailGuess); oi.Offset(0) < guess {
		want = append(want, [2]int64{oi.Offset(0), min(oi.CompressedPageSize(0), guess-oi.Offset(0))})
	}
	rs := reads[f.Path]
	if len(reads) != 1 || len(rs) != 1+len(want) || rs[0][0]+rs[0][1] != f.Size || (len(want) > 0 && rs[1] != want[0]) {
		t.Fatalf("the check read %v, want only %s's tail and its first page %v", reads, f.Path, want)
	}
	// The shard's reads of the probed page: from the cache.
	sh, err := v.Shard(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ks.take() // the index build's chunks
	if _, err := sh.Content(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, r := range ks.take()[f.Path] {
		// (The shard's own read-ahead reads the pages after it.)
		if r[0] == oi.Offset(0) || r[0]+r[1] == f.Size {
			t.Errorf("the probed sample, read by its shard, read %v again", r)
		}
	}
}

// TestReadAheadStopsAtShardEnd: a shard read in order (a loader without
// shuffling) reads ahead, but never a page holding only rows past its
// last row: those are the next shard's, maybe another node's.
func TestReadAheadStopsAtShardEnd(t *testing.T) {
	// 3 shards of 1800 rows in 2 files of 900: shard 0 is rows 0..599 of
	// file 0; shard 1 rows 600..899 of file 0 and 0..299 of file 1.
	ks, tbl, files := pixelTable(t, 2, 900)
	s, pf := pixelSamples(t, ks, tbl, 3, LayoutContiguous)
	ctx := context.Background()
	v, err := s.Version(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range []struct {
		file int
		end  int64 // the shard's last row in that file, + 1
	}{{0, 600}, {1, 300}} {
		readShard(t, v, k, false)
		if pf.Stats().ReadAhead == 0 {
			t.Fatal("a shard read in order read nothing ahead")
		}
		f := files[c.file]
		oi := pixelIndex(t, openLocalParquet(t, filepath.Join(ks.Storage.Location(), f.Path)))
		// The first page wholly past the shard's end.
		past := sort.Search(oi.NumPages(), func(i int) bool { return oi.FirstRowIndex(i) >= c.end })
		if past == oi.NumPages() {
			t.Fatalf("file %d: no page after row %d", c.file, c.end)
		}
		for _, r := range ks.take()[f.Path] {
			if r[0] >= oi.Offset(past) && r[0]+r[1] != f.Size { // not the tail's read
				t.Errorf("shard %d (rows ..%d of file %d) read %v, at or past page %d (rows %d..): another shard's", k, c.end-1, c.file, r, past, oi.FirstRowIndex(past))
			}
		}
	}
}

// TestSmallFileNoSpare: a file smaller than the tail read's guess is read
// whole by it, and those bytes are not kept beside the cache: its pages
// are read from storage (through the cache, under its bounds) when a
// sample needs them, as a mount's fault handling expects.
func TestSmallFileNoSpare(t *testing.T) {
	ks, tbl, files := pixelTable(t, 1, 40)
	if files[0].Size >= pqcheck.TailGuess {
		t.Fatalf("file of %d bytes, want one smaller than the %d-byte guess", files[0].Size, pqcheck.TailGuess)
	}
	s, _ := pixelSamples(t, ks, tbl, 1, LayoutContiguous)
	ctx := context.Background()
	v, err := s.Version(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := v.Shard(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ks.take()
	if _, err := sh.Content(ctx, sh.Len()-1); err != nil {
		t.Fatal(err)
	}
	if r := ks.take()[files[0].Path]; len(r) == 0 {
		t.Error("a sample of a small file read nothing from storage: its whole bytes were kept from the tail read")
	}
}
