package sample

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage"
)

// PageFetcher is the Parquet Fetcher: it reads one value by reading only
// the page that holds it. A data file is opened once (its footer and page
// index read) and its *parquet.File kept in a bounded LRU; the column's
// offset index locates the page of a row (FilePages.SeekToRow), and the
// decoded page — all its values — is kept in the BlobCache, keyed by (data
// file, size, column, row group/page), so neighbouring samples are served
// from memory. Files without an offset index are cached a whole column
// chunk at a time. Safe for concurrent use.
type PageFetcher struct {
	st    storage.Storage
	cache BlobCache
	max   int

	mu    sync.Mutex
	files map[string]*list.Element // guarded by mu; key -> *openFile
	ll    *list.List               // guarded by mu; front = most recent

	bytesRead atomic.Int64
	reads     atomic.Int64
	opens     atomic.Int64
	pages     atomic.Int64
}

// PageFetcherOptions configure a PageFetcher.
type PageFetcherOptions struct {
	// Cache holds decoded pages; nil means a 256 MiB MemCache.
	Cache BlobCache
	// MaxOpenFiles bounds the open *parquet.File handles (0: 64).
	MaxOpenFiles int
}

// NewPageFetcher reads data files from st.
func NewPageFetcher(st storage.Storage, opts PageFetcherOptions) *PageFetcher {
	if opts.Cache == nil {
		opts.Cache = NewMemCache(256 << 20)
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 64
	}
	return &PageFetcher{st: st, cache: opts.Cache, max: opts.MaxOpenFiles, files: map[string]*list.Element{}, ll: list.New()}
}

// FetchStats are the fetcher's counters.
type FetchStats struct {
	BytesRead    int64 `json:"data_bytes_read"` // bytes read from data files
	Reads        int64 `json:"data_reads"`      // ranged reads of data files
	FilesOpened  int64 `json:"files_opened"`    // footers read
	PagesDecoded int64 `json:"pages_decoded"`   // pages read and decoded (cache misses)
}

// Stats returns the counters.
func (p *PageFetcher) Stats() FetchStats {
	return FetchStats{BytesRead: p.bytesRead.Load(), Reads: p.reads.Load(), FilesOpened: p.opens.Load(), PagesDecoded: p.pages.Load()}
}

type openFile struct {
	key   string
	ready chan struct{} // closed when f/err are set
	f     *parquet.File
	err   error
	start []int64 // first row of each row group; start[len] = rows
}

// countingReader counts the bytes and calls that reach storage.
type countingReader struct {
	p   *PageFetcher
	key string
}

func (c countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.p.st.ReadAt(context.Background(), c.key, b, off)
	c.p.reads.Add(1)
	c.p.bytesRead.Add(int64(n))
	return n, err
}

func (p *PageFetcher) open(ctx context.Context, ref FileRef) (*openFile, error) {
	p.mu.Lock()
	if el, ok := p.files[ref.Key]; ok {
		p.ll.MoveToFront(el)
		of := el.Value.(*openFile)
		p.mu.Unlock()
		select {
		case <-of.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if of.err != nil {
			return nil, of.err
		}
		return of, nil
	}
	of := &openFile{key: ref.Key, ready: make(chan struct{})}
	p.files[ref.Key] = p.ll.PushFront(of)
	for p.ll.Len() > p.max {
		el := p.ll.Back()
		p.ll.Remove(el)
		delete(p.files, el.Value.(*openFile).key)
	}
	p.mu.Unlock()

	size := ref.Size
	if size <= 0 {
		info, err := p.st.Stat(ctx, ref.Key)
		if err == nil {
			size = info.Size
		}
		of.err = err
	}
	if of.err == nil {
		p.opens.Add(1)
		of.f, of.err = parquet.OpenFile(countingReader{p, ref.Key}, size, parquet.SkipBloomFilters(true))
	}
	if of.err == nil {
		rgs := of.f.RowGroups()
		of.start = make([]int64, len(rgs)+1)
		for i, rg := range rgs {
			of.start[i+1] = of.start[i] + rg.NumRows()
		}
	} else {
		// Do not keep failures: the next read tries again.
		p.mu.Lock()
		if el, ok := p.files[ref.Key]; ok && el.Value.(*openFile) == of {
			p.ll.Remove(el)
			delete(p.files, ref.Key)
		}
		p.mu.Unlock()
	}
	close(of.ready)
	return of, of.err
}

// NumRows implements Fetcher.
func (p *PageFetcher) NumRows(ctx context.Context, ref FileRef) (int64, error) {
	of, err := p.open(ctx, ref)
	if err != nil {
		return 0, err
	}
	return of.f.NumRows(), nil
}

// Value implements Fetcher.
func (p *PageFetcher) Value(ctx context.Context, ref FileRef, column string, row int64) ([]byte, error) {
	of, err := p.open(ctx, ref)
	if err != nil {
		return nil, err
	}
	col := of.f.Root().Column(column)
	if col == nil || !col.Leaf() {
		return nil, fmt.Errorf("no leaf column %q in the data file", column)
	}
	leaf := col.Index()
	if row < 0 || row >= of.start[len(of.start)-1] {
		return nil, fmt.Errorf("row %d out of range (file has %d rows)", row, of.start[len(of.start)-1])
	}
	rgi := sort.Search(len(of.start)-1, func(i int) bool { return of.start[i+1] > row }) // row group of row
	rg := of.f.RowGroups()[rgi]
	cc := rg.ColumnChunks()[leaf]
	inRG := row - of.start[rgi]

	var unit string
	var pageFirst int64 = -1
	if oi, err := cc.OffsetIndex(); err == nil && oi.NumPages() > 0 {
		pi := sort.Search(oi.NumPages(), func(i int) bool { return oi.FirstRowIndex(i) > inRG }) - 1
		if pi >= 0 {
			pageFirst = oi.FirstRowIndex(pi)
			unit = strconv.Itoa(rgi) + "/" + strconv.Itoa(pi)
		}
	}
	if pageFirst < 0 {
		pageFirst, unit = 0, strconv.Itoa(rgi)+"/all"
	}
	key := CacheKey{Kind: "page", File: ref.Path, Version: strconv.FormatInt(ref.Size, 10), Column: column, Unit: unit}
	blob, err := p.cache.Get(ctx, key, func(ctx context.Context) ([]byte, error) {
		return p.readPages(cc, pageFirst, unit[len(unit)-3:] != "all")
	})
	if err != nil {
		return nil, err
	}
	i := int(inRG - blobFirstRow(blob))
	if i < 0 || i >= blobLen(blob) {
		return nil, fmt.Errorf("row %d not in its page %s (rows %d..%d)", row, unit, blobFirstRow(blob), blobFirstRow(blob)+int64(blobLen(blob)))
	}
	return blobValue(blob, i), nil
}

// readPages decodes the page starting at row first of a column chunk (one
// page) or, without an offset index, every page of the chunk.
func (p *PageFetcher) readPages(cc parquet.ColumnChunk, first int64, onePage bool) ([]byte, error) {
	pages := cc.Pages()
	defer pages.Close()
	if err := pages.SeekToRow(first); err != nil {
		return nil, fmt.Errorf("seek to row %d: %w", first, err)
	}
	var data []byte
	var offs []uint32
	var nulls []bool
	buf := make([]parquet.Value, 256)
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
	offs = append(offs, uint32(len(data)))
	return packOffsets(first, data, offs, nulls), nil
}
