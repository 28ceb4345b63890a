package page

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/deltafs/deltafs/internal/flight"
	"github.com/deltafs/deltafs/internal/lru"
	"github.com/deltafs/deltafs/internal/packed"
	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/storage"
)

// Fetcher is the Parquet implementation of sample.Fetcher: it reads one
// value by reading only the page that holds it. A data file is opened from
// its tail — footer and page index, one storage read, kept in the Cache as
// kind "tail" so that a later process opens it without any read — and its
// *parquet.File kept in a bounded LRU. The scans of the index build open
// the file from the same tail (ScanTail, scan.Options.Tail): one read for
// both. The data pages that read's guess took in before the page index
// (its spare bytes, a bounded LRU of spareBytes in memory beside the
// cache) are decoded from those bytes, not read again. The column's offset
// index locates the page of a row; the page's exact byte range is read
// with one storage read and decoded, and the decoded page — all its values
// — is kept in the Cache, keyed by (data file, size, column, row
// group/page), so neighbouring samples are served from memory. With
// ReadAhead, a reader entering a page offers the next pages of the chunk
// to the cache's read-ahead (Prefetcher), read together when Coalesce is
// set, never a page past the reader's bound (FileRef.ReadAheadEnd: its
// shard's end). Files without an offset index are cached a whole column
// chunk at a time. parquet-go decodes only bytes read and checked first
// (package pqcheck): the tail, each page (and the dictionary page it
// needs) or chunk, served to it from memory. Safe for concurrent use.
type Fetcher struct {
	st        storage.Storage
	cache     Cache
	readAhead int
	pf        Prefetcher // nil: no read-ahead
	coalesce  bool

	ids sync.Map // storage key -> identity string (Identify)

	mu      sync.Mutex
	files   *lru.Cache[string, *openFile] // guarded by mu; opened files by key and identity, cost 1
	opening flight.Group[string, *openFile]

	spill      *spillStore // nil: no spilling
	spillAbove int64
	streaming  flight.Group[Key, []byte] // pages being decoded as a stream (stream.go)
	// declinedPages: large pages found not to be decoded as a stream
	// (their reads skip the look at their header); a bounded count.
	declinedMu    sync.Mutex
	declinedPages *lru.Cache[Key, struct{}] // guarded by declinedMu

	spareMu sync.Mutex
	spares  *lru.Cache[string, *spare] // guarded by spareMu; data-page bytes of tail reads by file, cost their bytes

	opens   atomic.Int64
	pages   atomic.Int64
	ahead   atomic.Int64
	spilled atomic.Int64
	// streamedPages: pages decoded as a stream into a spill file
	streamedPages atomic.Int64
}

// Options configure a Fetcher.
type Options struct {
	// Cache holds decoded pages; nil means a 256 MiB MemCache.
	Cache Cache
	// MaxOpenFiles bounds the open *parquet.File handles (0: 64).
	MaxOpenFiles int
	// ReadAhead: when a page is read, this many following pages of the same
	// column chunk (the next samples in shard order) are offered to the
	// cache's read-ahead, if it implements Prefetcher (0: none). The cache
	// bounds the bytes and concurrent reads of read-ahead.
	ReadAhead int
	// Coalesce reads the pages of one read-ahead with one
	// storage.ReadRanges: set it when the store serves several ranges with
	// fewer requests (a storage.RangeReader such as S3's).
	Coalesce bool
	// SpillAbove: a decoded page larger than this many bytes is kept in an
	// unlinked file (in SpillDir, "": os.TempDir()) once read by ValueAt,
	// which serves it from there: set it to what the Cache keeps in memory
	// for certain (0: never spill).
	SpillAbove int64
	SpillDir   string
	// SpillBytes bounds the bytes of the spilled pages (0: 2 GiB, two of
	// the largest page pqcheck accepts).
	SpillBytes int64
}

// Prefetcher is a Cache that fetches in the background (read-ahead). It
// declines (false) when its bounds are reached or the key is cached.
type Prefetcher interface {
	Prefetch(key Key, size int64, fetch func(ctx context.Context) ([]byte, error)) bool
}

// NewFetcher reads data files from st.
func NewFetcher(st storage.Storage, opts Options) *Fetcher {
	if opts.Cache == nil {
		opts.Cache = NewMemCache(256 << 20)
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 64
	}
	p := &Fetcher{st: st, cache: opts.Cache, readAhead: opts.ReadAhead, coalesce: opts.Coalesce, files: lru.New[string, *openFile](int64(opts.MaxOpenFiles), nil),
		spares: lru.New[string, *spare](spareBytes, nil), declinedPages: lru.New[Key, struct{}](4096, nil)}
	if pf, ok := opts.Cache.(Prefetcher); ok && opts.ReadAhead > 0 {
		p.pf = pf
	}
	if opts.SpillAbove > 0 {
		if opts.SpillBytes <= 0 {
			opts.SpillBytes = 2 * pqcheck.MaxPageBytes
		}
		p.spill, p.spillAbove = newSpillStore(opts.SpillDir, opts.SpillBytes), opts.SpillAbove
	}
	return p
}

// Stats are the fetcher's counters. The bytes and reads reaching
// storage are not among them: the storage counts those, once, whoever
// reads (see package table).
type Stats struct {
	FilesOpened  int64 `json:"files_opened"`  // footers read
	PagesDecoded int64 `json:"pages_decoded"` // pages read and decoded (cache misses)
	ReadAhead    int64 `json:"read_ahead"`    // pages handed to the cache's read-ahead
	PagesSpilled int64 `json:"pages_spilled"` // large pages kept in spill files (SpillAbove)
	// PagesStreamed counts large pages decoded as a stream straight into
	// a spill file, never whole in memory (also in PagesDecoded).
	PagesStreamed int64 `json:"pages_streamed"`
}

// Stats returns the counters.
func (p *Fetcher) Stats() Stats {
	return Stats{FilesOpened: p.opens.Load(), PagesDecoded: p.pages.Load(), ReadAhead: p.ahead.Load(), PagesSpilled: p.spilled.Load(), PagesStreamed: p.streamedPages.Load()}
}

type openFile struct {
	f     *parquet.File
	pq    *pqcheck.File // f's checked footer
	start []int64       // first row of each row group; start[len] = rows

	mu      sync.Mutex
	ahead   map[string]int        // guarded by mu; column chunk -> last page offered to read-ahead
	batches map[string]*pageBatch // guarded by mu; page (column, row group/page) -> the read-ahead batch holding it until its entry is filled
}

// batch returns the read-ahead batch that holds page unit of column, if any:
// a reader that misses the cache takes the page from it (starting its read
// if it has not started) instead of reading the page again.
func (of *openFile) batch(column, unit string) *pageBatch {
	of.mu.Lock()
	defer of.mu.Unlock()
	return of.batches[column+"\x00"+unit]
}

// setBatch records that batch b holds page unit of column.
func (of *openFile) setBatch(column, unit string, b *pageBatch) {
	of.mu.Lock()
	defer of.mu.Unlock()
	if of.batches == nil {
		of.batches = map[string]*pageBatch{}
	}
	of.batches[column+"\x00"+unit] = b
}

// dropBatch forgets the batch of page unit once the page's entry is filled.
func (of *openFile) dropBatch(column, unit string) {
	of.mu.Lock()
	defer of.mu.Unlock()
	delete(of.batches, column+"\x00"+unit)
}

// open returns ref's open file, opening it (once for concurrent callers,
// internal/flight) on a miss. A failure is not kept: the next read tries
// again.
func (p *Fetcher) open(ctx context.Context, ref FileRef) (*openFile, error) {
	fk := openKey(ref)
	if of, ok := p.openedFile(fk); ok {
		return of, nil
	}
	of, _, err := p.opening.Do(ctx, fk, func(ctx context.Context) (*openFile, error) {
		// An open that ended between the lookup above and this one has
		// kept its file.
		if of, ok := p.openedFile(fk); ok {
			return of, nil
		}
		size := ref.Size
		if size <= 0 {
			info, err := p.st.Stat(ctx, ref.Key)
			if err != nil {
				return nil, err
			}
			size = info.Size
		}
		f, pq, err := p.openParquet(ctx, ref, size)
		if err != nil {
			return nil, err
		}
		rgs := f.RowGroups()
		of := &openFile{f: f, pq: pq, start: make([]int64, len(rgs)+1)}
		for i, rg := range rgs {
			of.start[i+1] = of.start[i] + rg.NumRows()
		}
		p.mu.Lock()
		p.files.Add(fk, of, 1)
		p.mu.Unlock()
		return of, nil
	})
	return of, err
}

// openKey is the key of ref's open file and spare bytes: a replaced
// object is another file.
func openKey(ref FileRef) string { return ref.Key + "\x00" + ref.ID }

// openedFile returns the kept open file of key fk.
func (p *Fetcher) openedFile(fk string) (*openFile, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files.Get(fk)
}

// openParquet opens a data file from its tail (footer and page index),
// cached as kind "tail": a cached tail opens the file without any storage
// read; otherwise the tail costs one read (see readTail). The tail is
// checked (pqcheck.Tail) before parquet-go parses it, which then reads
// nothing else: a read outside the tail fails.
func (p *Fetcher) openParquet(ctx context.Context, ref FileRef, size int64) (f *parquet.File, pq *pqcheck.File, err error) {
	defer recoverParquet(&err)
	tail, off, err := p.tail(ctx, ref, size)
	if err != nil {
		return nil, nil, err
	}
	if pq, err = pqcheck.Tail(tail, off, size); err != nil {
		return nil, nil, err
	}
	r := &pqcheck.Staged{}
	r.Add(off, tail)
	f, err = parquet.OpenFile(r, size, parquet.SkipMagicBytes(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, nil, err
	}
	return f, pq, nil
}

// tail returns the tail (footer and page index) of ref, a file of size
// bytes, and its offset: from the cache (kind "tail"), else with one
// storage read (see readTail), whose bytes before the page index (data
// pages the read's guess took in) are kept as the file's spare bytes.
func (p *Fetcher) tail(ctx context.Context, ref FileRef, size int64) ([]byte, int64, error) {
	sized := ref
	sized.Size = size
	blob, err := p.cache.Get(ctx, tailKey(sized), func(ctx context.Context) ([]byte, error) {
		p.opens.Add(1)
		// The fill's context: cancelled when every reader waiting for
		// the tail has given up (an interrupted FUSE request).
		first := &firstRead{r: storage.ReaderAt(ctx, p.st, ref.Key)}
		blob, err := readTail(first, size)
		if err == nil {
			p.keepSpare(ref, first, blob)
		}
		return blob, err
	})
	if err != nil {
		return nil, 0, err
	}
	return parseTail(blob)
}

// ScanTail is the tail of data file f for the scans of the index build
// (scan.Options.Tail): the tail the fetcher opens the file from, read
// once for both. size is f's size (0: unknown).
func (p *Fetcher) ScanTail(ctx context.Context, f FileRef, size int64) (tail []byte, off int64, err error) {
	if size <= 0 {
		info, err := p.st.Stat(ctx, f.Key)
		if err != nil {
			return nil, 0, err
		}
		size = info.Size
	}
	if f, err = p.Identify(ctx, f); err != nil {
		return nil, 0, err
	}
	return p.tail(ctx, f, size)
}

// spareBytes bounds the spare bytes kept (Fetcher.spares): about a
// hundred tail reads' worth.
const spareBytes = 8 << 20

// spare is the part of a file's tail read before its page index: data
// pages (of the last columns of the last row group, typically) that the
// read's guess took in, served from memory instead of being read again.
type spare struct {
	off int64
	b   []byte
}

// firstRead is an io.ReaderAt that remembers its first read (the tail
// read's guess at the file's end).
type firstRead struct {
	r   io.ReaderAt
	off int64
	b   []byte
}

func (f *firstRead) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.r.ReadAt(p, off)
	if f.b == nil && err == nil {
		f.off, f.b = off, p[:n]
	}
	return n, err
}

// keepSpare keeps the bytes of the tail read's first read before the
// tail blob's start (data pages), if any. Not for a file the read took
// in whole (smaller than the guess): the spare bytes are what a large
// file's tail read took in beyond its tail, not a second cache of whole
// files beside the cache (whose bounds and faults a whole file's reads
// then go through).
func (p *Fetcher) keepSpare(ref FileRef, first *firstRead, blob []byte) {
	_, start, err := parseTail(blob)
	if err != nil || first.b == nil || first.off == 0 || start <= first.off || start > first.off+int64(len(first.b)) {
		return
	}
	// A copy: the read's buffer is the whole guess, and the LRU's cost
	// must be what is kept.
	sp := &spare{off: first.off, b: append([]byte(nil), first.b[:start-first.off]...)}
	p.spareMu.Lock()
	p.spares.Add(openKey(ref), sp, int64(len(sp.b)))
	p.spareMu.Unlock()
}

// spareOf returns the kept bytes [off, off+n) of ref, if the spare bytes
// hold them all.
func (p *Fetcher) spareOf(ref FileRef, off, n int64) ([]byte, bool) {
	p.spareMu.Lock()
	sp, ok := p.spares.Get(openKey(ref))
	p.spareMu.Unlock()
	if !ok || off < sp.off || n < 0 || off+n > sp.off+int64(len(sp.b)) {
		return nil, false
	}
	return sp.b[off-sp.off : off-sp.off+n : off-sp.off+n], true
}

// spared reports whether the spare bytes of ref hold the end of
// [off, off+n), so that spareReader reads at most its beginning.
func (p *Fetcher) spared(ref FileRef, off, n int64) bool {
	p.spareMu.Lock()
	sp, ok := p.spares.Get(openKey(ref))
	p.spareMu.Unlock()
	return ok && off+n > sp.off && off+n <= sp.off+int64(len(sp.b))
}

// spareReader reads ref's bytes from its spare bytes where they hold the
// range asked, or its end (a page that begins before them: only its
// beginning is read), else from storage.
type spareReader struct {
	p   *Fetcher
	ref FileRef
	st  io.ReaderAt
}

func (r spareReader) ReadAt(b []byte, off int64) (int, error) {
	n := int64(len(b))
	if sp, ok := r.p.spareOf(r.ref, off, n); ok {
		return copy(b, sp), nil
	}
	r.p.spareMu.Lock()
	sp, ok := r.p.spares.Get(openKey(r.ref))
	r.p.spareMu.Unlock()
	if !ok || off >= sp.off || off+n <= sp.off || off+n > sp.off+int64(len(sp.b)) {
		return r.st.ReadAt(b, off)
	}
	head := sp.off - off
	got, err := r.st.ReadAt(b[:head], off)
	if int64(got) < head {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return got, err
	}
	return got + copy(b[head:], sp.b), nil
}

// recoverParquet turns a panic of parquet-go into an error (deferred):
// one damaged file must not take the mount down.
func recoverParquet(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("malformed Parquet file (parquet-go panicked: %v)", p)
	}
}

// Identify implements sample.Fetcher: one Stat per key and process. The identity
// is the store's ETag where it has one (S3), else the size and the
// modification time in nanoseconds (local files), with the size either way.
func (p *Fetcher) Identify(ctx context.Context, ref FileRef) (FileRef, error) {
	if id, ok := p.ids.Load(ref.Key); ok {
		ref.ID = id.(string)
		return ref, nil
	}
	info, err := p.st.Stat(ctx, ref.Key)
	if errors.Is(err, storage.ErrNotExist) && !storage.IsTableWide(err) {
		return ref, fmt.Errorf("data file missing from storage (vacuumed?): %w", storage.ErrNotExist)
	}
	if err != nil {
		return ref, err
	}
	if ref.Size > 0 && info.Size != ref.Size {
		return ref, fmt.Errorf("the log says %d bytes, the store holds %d", ref.Size, info.Size)
	}
	id := "s" + strconv.FormatInt(info.Size, 10)
	if info.ETag != "" {
		id += "-e" + info.ETag
	} else {
		id += "-m" + strconv.FormatInt(info.ModTime.UnixNano(), 10)
	}
	actual, _ := p.ids.LoadOrStore(ref.Key, id)
	ref.ID = actual.(string)
	return ref, nil
}

// NumRows implements sample.Fetcher.
func (p *Fetcher) NumRows(ctx context.Context, ref FileRef) (int64, error) {
	of, err := p.open(ctx, ref)
	if err != nil {
		return 0, err
	}
	return of.f.NumRows(), nil
}

// Value implements sample.Fetcher.
func (p *Fetcher) Value(ctx context.Context, ref FileRef, column string, row int64) ([]byte, error) {
	blob, start, err := p.page(ctx, ref, column, row)
	if err != nil {
		return nil, err
	}
	i := int(row - start - packed.FirstRow(blob))
	if i < 0 || i >= packed.Len(blob) {
		return nil, fmt.Errorf("row %d not in its page (rows %d..%d)", row, start+packed.FirstRow(blob), start+packed.FirstRow(blob)+int64(packed.Len(blob)))
	}
	return packed.Value(blob, i), nil
}

// Values implements sample.Fetcher: it walks the column's pages in order, each
// through the cache as Value reads it (so that the pages are cached for
// the reads that follow, and read ahead as a reader in file order would).
func (p *Fetcher) Values(ctx context.Context, ref FileRef, column string, fn func(row int64, v []byte) error) error {
	of, err := p.open(ctx, ref)
	if err != nil {
		return err
	}
	total := of.start[len(of.start)-1]
	for row := int64(0); row < total; {
		blob, start, err := p.page(ctx, ref, column, row)
		if err != nil {
			return err
		}
		first, n := start+packed.FirstRow(blob), packed.Len(blob)
		if first != row || n == 0 {
			return fmt.Errorf("the page at row %d starts at row %d and holds %d values", row, first, n)
		}
		for i := range n {
			if err := fn(row+int64(i), packed.Value(blob, i)); err != nil {
				return err
			}
		}
		row += int64(n)
	}
	return nil
}

// Heads implements sample.RangeFetcher: Values, with a page that is decoded as
// a stream (too large for memory) read from its spill file.
func (p *Fetcher) Heads(ctx context.Context, ref FileRef, column string, max int, fn func(row, size int64, head []byte) error) error {
	of, err := p.open(ctx, ref)
	if err != nil {
		return err
	}
	buf := make([]byte, max)
	total := of.start[len(of.start)-1]
	for row := int64(0); row < total; {
		l, err := p.locate(ctx, ref, column, row)
		if err != nil {
			return err
		}
		n, err := p.pageHeads(ctx, ref, column, l, row, buf, fn)
		if err != nil {
			return err
		}
		row += n
	}
	return nil
}

// pageHeads calls fn for the values of the page at l, which must start
// at row, and returns how many there are.
func (p *Fetcher) pageHeads(ctx context.Context, ref FileRef, column string, l *pageLoc, row int64, buf []byte, fn func(row, size int64, head []byte) error) (int64, error) {
	s := p.spill.acquire(l.key)
	if s == nil {
		var err error
		if s, err = p.streamed(ctx, ref, column, l); err != nil {
			return 0, err
		}
	}
	if s != nil {
		defer p.spill.release(s)
		if first := l.of.start[l.rgi] + s.firstRow; first != row || s.n == 0 {
			return 0, fmt.Errorf("the page at row %d starts at row %d and holds %d values", row, first, s.n)
		}
		for i := range s.n {
			size, n, err := s.head(i, buf)
			if err != nil {
				return 0, err
			}
			if err := fn(row+int64(i), size, buf[:n]); err != nil {
				return 0, err
			}
		}
		return int64(s.n), nil
	}
	blob, err := p.get(ctx, ref, column, l)
	if err != nil {
		return 0, err
	}
	first, n := l.of.start[l.rgi]+packed.FirstRow(blob), packed.Len(blob)
	if first != row || n == 0 {
		return 0, fmt.Errorf("the page at row %d starts at row %d and holds %d values", row, first, n)
	}
	for i := range n {
		v := packed.Value(blob, i)
		if err := fn(row+int64(i), int64(len(v)), v[:min(len(v), len(buf))]); err != nil {
			return 0, err
		}
	}
	return int64(n), nil
}

// Head implements sample.RangeFetcher.
func (p *Fetcher) Head(ctx context.Context, ref FileRef, column string, row int64, max int) (int64, []byte, error) {
	l, err := p.locate(ctx, ref, column, row)
	if err != nil {
		return 0, nil, err
	}
	s := p.spill.acquire(l.key)
	if s == nil {
		if s, err = p.streamed(ctx, ref, column, l); err != nil {
			return 0, nil, err
		}
	}
	if s != nil {
		defer p.spill.release(s)
		buf := make([]byte, max)
		size, n, err := s.head(int(l.inRG-s.firstRow), buf)
		return size, buf[:n], err
	}
	v, err := p.Value(ctx, ref, column, row)
	if err != nil {
		return 0, nil, err
	}
	return int64(len(v)), v[:min(len(v), max)], nil
}

// pageLoc is where the page holding a row of a column lies.
type pageLoc struct {
	of        *openFile
	rgi, leaf int
	cc        parquet.ColumnChunk
	oi        parquet.OffsetIndex // nil: none
	pi        int                 // the page in the offset index; -1: the chunk is read whole
	inRG      int64               // the row in its row group
	pageFirst int64               // the page's first row in its row group
	pageOff   int64
	pageLen   int64
	page0     int64 // the chunk's first page's offset
	unit      string
	key       Key
	head      []byte // the page's first bytes, when read already (streamed)
}

// locate finds the page holding row of column.
func (p *Fetcher) locate(ctx context.Context, ref FileRef, column string, row int64) (*pageLoc, error) {
	of, err := p.open(ctx, ref)
	if err != nil {
		return nil, err
	}
	col := of.f.Root().Column(column)
	if col == nil || !col.Leaf() {
		return nil, fmt.Errorf("no leaf column %q in the data file", column)
	}
	if row < 0 || row >= of.start[len(of.start)-1] {
		return nil, fmt.Errorf("row %d out of range (file has %d rows)", row, of.start[len(of.start)-1])
	}
	l := &pageLoc{of: of, leaf: col.Index(), pi: -1, pageFirst: -1}
	l.rgi = sort.Search(len(of.start)-1, func(i int) bool { return of.start[i+1] > row }) // row group of row
	l.cc = of.f.RowGroups()[l.rgi].ColumnChunks()[l.leaf]
	l.inRG = row - of.start[l.rgi]
	if oi, oerr := l.cc.OffsetIndex(); oerr == nil && oi.NumPages() > 0 {
		l.oi = oi
		l.page0 = oi.Offset(0)
		l.pi = sort.Search(oi.NumPages(), func(i int) bool { return oi.FirstRowIndex(i) > l.inRG }) - 1
		if l.pi >= 0 {
			l.pageFirst = oi.FirstRowIndex(l.pi)
			l.pageOff, l.pageLen = oi.Offset(l.pi), oi.CompressedPageSize(l.pi)
			l.unit = strconv.Itoa(l.rgi) + "/" + strconv.Itoa(l.pi)
		}
	}
	if l.pageFirst < 0 {
		l.pageFirst, l.unit = 0, strconv.Itoa(l.rgi)+"/all"
	}
	l.key = p.pageKey(ref, column, l.unit)
	return l, nil
}

// page returns the decoded page (a blob, package internal/packed) holding row of
// column, and the first row of its row group.
func (p *Fetcher) page(ctx context.Context, ref FileRef, column string, row int64) ([]byte, int64, error) {
	l, err := p.locate(ctx, ref, column, row)
	if err != nil {
		return nil, 0, err
	}
	blob, err := p.get(ctx, ref, column, l)
	if err != nil {
		return nil, 0, err
	}
	return blob, l.of.start[l.rgi], nil
}

// get returns the decoded page at l, through the cache.
func (p *Fetcher) get(ctx context.Context, ref FileRef, column string, l *pageLoc) ([]byte, error) {
	of := l.of
	blob, err := p.cache.Get(ctx, l.key, func(ctx context.Context) ([]byte, error) {
		var raw func() ([]byte, error)
		if b := of.batch(column, l.unit); b != nil {
			// Read ahead already, or about to be: one read for both.
			raw = func() ([]byte, error) { return b.get(ctx, l.pi) }
		} else if head := l.head; head != nil && l.pageLen > 0 {
			// Its first bytes read already (streamed, which declined it).
			raw = func() ([]byte, error) {
				rest, err := readExact(storage.ReaderAt(ctx, p.st, ref.Key), l.pageOff+int64(len(head)), l.pageLen-int64(len(head)))
				if err != nil {
					return nil, err
				}
				return append(head[:len(head):len(head)], rest...), nil
			}
		}
		return p.readPages(ctx, of, ref, chunkAt{l.rgi, l.leaf, l.cc, l.page0}, l.pageFirst, l.pageOff, l.pageLen, raw)
	})
	of.dropBatch(column, l.unit)
	// Read ahead when a reader enters a page at its first row, as a reader
	// in shard order does: not on every row, and not for a random sample
	// in the middle of a page (it would cost a random reader pages it
	// never reads).
	if err == nil && l.pi >= 0 && p.pf != nil && l.inRG == l.pageFirst {
		p.prefetch(of, ref, column, chunkAt{l.rgi, l.leaf, l.cc, l.page0}, l.oi, l.pi)
	}
	return blob, err
}

// ValueAt reads bytes [off, off+len(b)) of the value of column at row
// into b: the count read, 0 at or past its end (and for a null). A page
// larger than SpillAbove is spilled to a file the first time it is read
// and served from there afterwards (spillStore), so reading a large value
// in small reads decodes it once.
func (p *Fetcher) ValueAt(ctx context.Context, ref FileRef, column string, row int64, b []byte, off int64) (int, error) {
	if p.spill == nil {
		v, err := p.Value(ctx, ref, column, row)
		return packed.CopyAt(b, v, off), err
	}
	l, err := p.locate(ctx, ref, column, row)
	if err != nil {
		return 0, err
	}
	if s := p.spill.acquire(l.key); s != nil {
		defer p.spill.release(s)
		return s.readValue(int(l.inRG-s.firstRow), b, off)
	}
	if s, err := p.streamed(ctx, ref, column, l); err != nil || s != nil {
		if err != nil {
			return 0, err
		}
		defer p.spill.release(s)
		return s.readValue(int(l.inRG-s.firstRow), b, off)
	}
	blob, err := p.get(ctx, ref, column, l)
	if err != nil {
		return 0, err
	}
	i := int(l.inRG - packed.FirstRow(blob))
	if i < 0 || i >= packed.Len(blob) {
		return 0, fmt.Errorf("row %d not in its page (rows %d..%d)", row, l.of.start[l.rgi]+packed.FirstRow(blob), l.of.start[l.rgi]+packed.FirstRow(blob)+int64(packed.Len(blob)))
	}
	if int64(len(blob)) > p.spillAbove && p.spill.add(l.key, blob) {
		p.spilled.Add(1)
	}
	return packed.CopyAt(b, packed.Value(blob, i), off), nil
}

// pageKey is the key of the decoded page unit ("rg/page", or "rg/all"
// for a chunk read whole) of column of ref.
func (p *Fetcher) pageKey(ref FileRef, column, unit string) Key {
	return ref.CacheKey("page", column, unit)
}

// prefetch offers the pages after page pi of a column chunk to the cache's
// read-ahead: the next samples of the file in shard order.
func (p *Fetcher) prefetch(of *openFile, ref FileRef, column string, ch chunkAt, oi parquet.OffsetIndex, pi int) {
	rgi := ch.rg
	chunk := column + "\x00" + strconv.Itoa(rgi)
	of.mu.Lock()
	if of.ahead == nil {
		of.ahead = map[string]int{}
	}
	from, seen := of.ahead[chunk]
	if !seen || from < pi || from > pi+p.readAhead {
		from = pi // a jump (random access, or back): start again from here
	}
	of.mu.Unlock()
	if from > pi+p.readAhead/2 && from < oi.NumPages()-1 {
		// More than half the window is still ahead: refill later, by half
		// a window at a time, so that the pages of one refill are
		// neighbours read together (Coalesce).
		return
	}
	// The pages offered: up to the window's end, the chunk's end and the
	// reader's bound (FileRef.ReadAheadEnd: the rows after it are not
	// this reader's).
	end := min(pi+p.readAhead+1, oi.NumPages())
	if ref.ReadAheadEnd > 0 {
		for j := from + 1; j < end; j++ {
			if of.start[rgi]+oi.FirstRowIndex(j) >= ref.ReadAheadEnd {
				end = j
				break
			}
		}
	}
	last := from
	batch := &pageBatch{p: p, key: ref.Key, ranges: map[int]storage.Range{}, accepted: map[int]bool{}, done: make(chan struct{})}
	for j := from + 1; j < end; j++ {
		batch.ranges[j] = storage.Range{Off: oi.Offset(j), Len: oi.CompressedPageSize(j)}
	}
	for j := from + 1; j < end; j++ {
		first, off, n := oi.FirstRowIndex(j), oi.Offset(j), oi.CompressedPageSize(j)
		unit := strconv.Itoa(rgi) + "/" + strconv.Itoa(j)
		key := p.pageKey(ref, column, unit)
		// A page the tail read took in, wholly or its end, is decoded
		// from those bytes (spareReader): no storage read, or one of its
		// beginning only, and none in the batch.
		spared := p.spared(ref, off, n)
		fetch := func(ctx context.Context) ([]byte, error) {
			return p.readPages(ctx, of, ref, ch, first, off, n, nil)
		}
		if !spared {
			batch.accept(j)
			of.setBatch(column, unit, batch)
			fetch = func(ctx context.Context) ([]byte, error) {
				defer of.dropBatch(column, unit)
				return p.readPages(ctx, of, ref, ch, first, off, n, func() ([]byte, error) { return batch.get(ctx, j) })
			}
		}
		if !p.pf.Prefetch(key, n, fetch) {
			if !spared {
				batch.unaccept(j)
				of.dropBatch(column, unit)
			}
			break // bound reached or already in memory: the rest waits
		}
		p.ahead.Add(1)
		last = j
	}
	of.mu.Lock()
	of.ahead[chunk] = last
	of.mu.Unlock()
}

// pageBatch coalesces the reads of the pages one read-ahead offers: the
// first of their fetches to run reads every page accepted so far with one
// storage.ReadRanges (one request on stores that coalesce, such as S3);
// a page accepted after that is read on its own.
type pageBatch struct {
	p      *Fetcher
	key    string
	ranges map[int]storage.Range // every page offered

	mu       sync.Mutex
	accepted map[int]bool // guarded by mu; pages the cache took
	started  bool         // guarded by mu
	bufs     map[int][]byte
	err      error
	done     chan struct{} // closed when bufs and err are set
}

func (b *pageBatch) accept(j int) {
	b.mu.Lock()
	b.accepted[j] = true
	b.mu.Unlock()
}

// unaccept takes back page j, which the cache declined.
func (b *pageBatch) unaccept(j int) {
	b.mu.Lock()
	delete(b.accepted, j)
	b.mu.Unlock()
}

// get returns page j's bytes.
func (b *pageBatch) get(ctx context.Context, j int) ([]byte, error) {
	b.mu.Lock()
	if !b.started {
		b.started = true
		pages := []int{j}
		for k := range b.accepted {
			if k != j && b.p.coalesce {
				pages = append(pages, k)
			}
		}
		b.mu.Unlock()
		sort.Ints(pages)
		rs := make([]storage.Range, len(pages))
		for i, k := range pages {
			rs[i] = b.ranges[k]
		}
		bufs, err := storage.ReadRanges(ctx, b.p.st, b.key, rs)
		b.bufs = map[int][]byte{}
		if err == nil {
			for i, k := range pages {
				b.bufs[k] = bufs[i]
			}
		}
		b.err = err
		close(b.done)
	} else {
		b.mu.Unlock()
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if buf, ok := b.bufs[j]; ok {
		return buf, nil
	}
	if b.err != nil && (ctx.Err() != nil || !errors.Is(b.err, context.Canceled) && !errors.Is(b.err, context.DeadlineExceeded)) {
		return nil, b.err
	}
	// Not in the batch, or the batch's reader gave up (its context, not
	// ours): read the page alone.
	r := b.ranges[j]
	return readExact(storage.ReaderAt(ctx, b.p.st, b.key), r.Off, r.Len)
}

// chunkAt is a column chunk of an open file: row group rg, leaf column
// col, and the offset of its first data page by the offset index (0
// without one).
type chunkAt struct {
	rg, col int
	cc      parquet.ColumnChunk
	page0   int64
}

// readPages decodes the page starting at row first of a column chunk, whose
// bytes are [pageOff, pageOff+pageLen) of the file — read with one ranged
// read — or, without an offset index (pageLen 0), every page of the chunk,
// read whole (up to pqcheck.MaxChunkBytes). raw, if not nil, supplies the
// page's bytes instead. The bytes are checked (pqcheck.CheckPages) and
// parquet-go decodes from them, reading nothing else; a dictionary-encoded
// page needs the chunk's dictionary page, read and checked the same way.
func (p *Fetcher) readPages(ctx context.Context, of *openFile, ref FileRef, ch chunkAt, first, pageOff, pageLen int64, raw func() ([]byte, error)) (blob []byte, err error) {
	defer recoverParquet(&err)
	fcc, ok := ch.cc.(*parquet.FileColumnChunk)
	if !ok {
		return nil, fmt.Errorf("column %s: not a file column chunk", of.pq.Column(ch.col))
	}
	// ctx: the fill's, see openParquet. Bytes the tail read took in are
	// not read again.
	raw0 := spareReader{p: p, ref: ref, st: storage.ReaderAt(ctx, p.st, ref.Key)}
	var staged *pqcheck.Staged
	onePage := pageLen > 0
	if onePage {
		if raw == nil {
			raw = func() ([]byte, error) { return readExact(raw0, pageOff, pageLen) }
		}
		var b []byte
		if b, err = raw(); err != nil {
			return nil, err
		}
		staged, err = of.pq.StagePage(raw0, ch.rg, ch.col, pageOff, b, ch.page0)
	} else {
		staged, err = of.pq.StageChunk(raw0, ch.rg, ch.col)
	}
	if err != nil {
		return nil, err
	}
	pages := fcc.PagesFrom(staged)
	defer pages.Close()
	if err := pages.SeekToRow(first); err != nil {
		return nil, fmt.Errorf("seek to row %d: %w", first, err)
	}
	var data []byte
	var offs []uint32
	var nulls []bool
	buf := make([]parquet.Value, 256)
	maxDef := -1 // the leaf's definition level of a present value; -1: unknown
	if leaf := leafAt(of.f.Root(), ch.col); leaf != nil {
		maxDef = leaf.MaxDefinitionLevel()
	}
	for {
		pg, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p.pages.Add(1)
		if data == nil {
			data = make([]byte, 0, pg.Size())
		}
		var ok bool
		if data, offs, nulls, ok, err = appendPageFast(pg, maxDef, data, offs, nulls); err != nil {
			parquet.Release(pg)
			return nil, err
		}
		if ok {
			parquet.Release(pg)
			if onePage {
				break
			}
			continue
		}
		r := pg.Values()
		for {
			n, err := r.ReadValues(buf)
			for _, v := range buf[:n] {
				if v.RepetitionLevel() > 0 {
					parquet.Release(pg)
					return nil, errors.New("the data column is repeated; it must be a flat binary column")
				}
				offs = append(offs, uint32(len(data)))
				nulls = append(nulls, v.IsNull())
				if !v.IsNull() {
					data = append(data, v.ByteArray()...)
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(pg)
				return nil, err
			}
		}
		parquet.Release(pg)
		if onePage {
			break
		}
	}
	// The page index placed the page: a page whose values are not the rows
	// the index gives it (a damaged offset index, which has no checksum)
	// would serve rows' neighbours as their values.
	if want := expectedValues(ch.cc, first, onePage); want >= 0 && int64(len(offs)) != want {
		return nil, fmt.Errorf("column %s: the page of rows from %d holds %d values, the page index says %d (damaged page index)", of.pq.Column(ch.col), first, len(offs), want)
	}
	offs = append(offs, uint32(len(data)))
	return packed.PackOffsets(first, data, offs, nulls), nil
}

// appendPageFast appends a flat byte array page's values from parquet-go's
// typed page data (plain or dictionary-encoded), without a parquet.Value
// per value; ok false when the page is of another shape (the caller then
// reads it value by value).
func appendPageFast(pg parquet.Page, maxDef int, data []byte, offs []uint32, nulls []bool) (_ []byte, _ []uint32, _ []bool, ok bool, err error) {
	n := int(pg.NumValues())
	if maxDef < 0 || maxDef > 1 {
		return data, offs, nulls, false, nil // unknown, or nested: value by value
	}
	for _, r := range pg.RepetitionLevels() {
		if r > 0 {
			return data, offs, nulls, false, errors.New("the data column is repeated; it must be a flat binary column")
		}
	}
	defs := pg.DefinitionLevels()
	if maxDef == 1 && len(defs) != n || maxDef == 0 && len(defs) != 0 {
		return data, offs, nulls, false, nil
	}
	src := pg.Data()
	var idx []int32
	if dict := pg.Dictionary(); dict != nil {
		if src.Kind() != encoding.Int32 {
			return data, offs, nulls, false, nil
		}
		idx = src.Int32()
		src = dict.Page().Data()
	}
	if src.Kind() != encoding.ByteArray {
		return data, offs, nulls, false, nil
	}
	vals, voffs := src.ByteArray()
	nv := len(voffs) - 1
	if idx != nil {
		nv = len(idx)
	}
	if nv < 0 {
		nv = 0
	}
	value := func(j int) ([]byte, bool) {
		if idx != nil {
			k := int(idx[j])
			if k < 0 || k+1 >= len(voffs) {
				return nil, false
			}
			j = k
		}
		a, b := voffs[j], voffs[j+1]
		if a > b || int(b) > len(vals) {
			return nil, false
		}
		return vals[a:b], true
	}
	j := 0 // next non-null value
	for i := range n {
		null := maxDef == 1 && defs[i] == 0
		offs = append(offs, uint32(len(data)))
		nulls = append(nulls, null)
		if null {
			continue
		}
		if j >= nv {
			return data, offs, nulls, false, fmt.Errorf("a page of %d values holds only %d", n, nv)
		}
		v, good := value(j)
		if !good {
			return data, offs, nulls, false, fmt.Errorf("a page's value %d lies outside its bytes or dictionary", j)
		}
		data = append(data, v...)
		j++
	}
	return data, offs, nulls, true, nil
}

// leafAt is the leaf column numbered i (in leaf order), or nil.
func leafAt(c *parquet.Column, i int) *parquet.Column {
	if c.Leaf() {
		if c.Index() == i {
			return c
		}
		return nil
	}
	for _, ch := range c.Columns() {
		if l := leafAt(ch, i); l != nil {
			return l
		}
	}
	return nil
}

// expectedValues is how many values the page starting at row first of a
// flat column chunk holds by its offset index (the whole chunk's when
// !onePage), or -1 when that is unknown.
func expectedValues(cc parquet.ColumnChunk, first int64, onePage bool) int64 {
	total := cc.NumValues()
	if !onePage {
		return total - first
	}
	oi, err := cc.OffsetIndex()
	if err != nil || oi.NumPages() == 0 {
		return -1
	}
	i := sort.Search(oi.NumPages(), func(i int) bool { return oi.FirstRowIndex(i) >= first })
	if i >= oi.NumPages() || oi.FirstRowIndex(i) != first {
		return -1
	}
	if i+1 < oi.NumPages() {
		return oi.FirstRowIndex(i+1) - first
	}
	return total - first
}
