package page

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/blockcodec"
	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/storage"
)

// Pages too large for memory are decoded as a stream, into a spill file.
//
// The decode of a page (readPages) holds its compressed bytes, its
// decoded bytes and its values in memory at once, several times the page:
// for a page holding one sample of hundreds of MiB, far more than the
// memory cache is given. A data page of a flat binary column in the PLAIN
// encoding — the page of every large sample written by Spark, Databricks,
// delta-rs or deltafs — is instead read in ranged reads of streamChunk
// bytes, checked against its CRC as it goes, decompressed as a stream
// (gzip, zstd and brotli by their libraries' stream decoders, snappy and
// LZ4 by package blockcodec) and written to an unlinked spill file; its
// levels and value lengths are then read back from the file, and each
// value is served from the file by its offset (spillFile). Memory is a
// bounded window and chunk, the levels, and a few bytes a value:
// independent of the page's size. Pages of other shapes (dictionary
// pages, other encodings, nested columns), or headers that do not fit in
// the first chunk, are decoded in memory as before.

const (
	// streamChunk is the size of each ranged read of a streamed page.
	streamChunk = 4 << 20
	// streamWindow is the decoded bytes a snappy or LZ4 decode keeps in
	// memory; copies from further back read the spill file.
	streamWindow = 1 << 20
	// streamZstdWindow bounds a zstd frame's window (its decoder's
	// memory): a frame that needs more is decoded in memory instead.
	streamZstdWindow = 64 << 20
)

// errNotStreamed: the page is not of a shape decoded as a stream.
var errNotStreamed = errors.New("not streamed")

// streamed returns the spilled page at l, decoding it as a stream into a
// spill file first when it is large enough to be spilled and of a shape
// decoded as a stream. It returns nil (and no error) for a page to be
// decoded in memory; l.head then holds the page's first bytes, already
// read. The returned file is held until spill.release.
func (p *Fetcher) streamed(ctx context.Context, ref FileRef, column string, l *pageLoc) (*spillFile, error) {
	// Only a page whose compressed bytes pass SpillAbove is looked at
	// (its header read): every other read of a page goes straight to the
	// cache. A page that compresses below SpillAbove and decodes above it
	// is decoded in memory.
	if p.spill == nil || l.pi < 0 || l.pageLen <= p.spillAbove {
		return nil, nil
	}
	if p.declined(l.key) {
		return nil, nil
	}
	for range 2 {
		if s := p.spill.acquire(l.key); s != nil {
			return s, nil
		}
		head, _, err := p.streaming.Do(ctx, l.key, func(ctx context.Context) ([]byte, error) {
			if s := p.spill.acquire(l.key); s != nil { // spilled meanwhile
				p.spill.release(s)
				return nil, nil
			}
			return p.streamPage(ctx, ref, column, l)
		})
		if errors.Is(err, errNotStreamed) {
			p.decline(l.key)
			l.head = head
			return nil, nil
		}
		if isSpillError(err) {
			// No room for the spill file (a full disk): decoded in
			// memory, as before there were spill files; not declined,
			// so that the next read tries again.
			l.head = head
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	// Spilled twice and evicted each time before it could be read (spill
	// files past their budget): decoded in memory instead.
	return nil, nil
}

// declined reports whether the page of key k was found not to be of a
// shape decoded as a stream, so that its reads go to the cache without
// a look at its header again.
func (p *Fetcher) declined(k Key) bool {
	p.declinedMu.Lock()
	defer p.declinedMu.Unlock()
	_, ok := p.declinedPages.Get(k)
	return ok
}

func (p *Fetcher) decline(k Key) {
	p.declinedMu.Lock()
	defer p.declinedMu.Unlock()
	p.declinedPages.Add(k, struct{}{}, 1)
}

// streamPage decodes the page at l into a new spill file and keeps it
// in the spill store. It returns the page's first bytes and errNotStreamed
// when the page is not decoded as a stream.
func (p *Fetcher) streamPage(ctx context.Context, ref FileRef, column string, l *pageLoc) (head []byte, err error) {
	defer recoverParquet(&err)
	of := l.of
	r := storage.ReaderAt(ctx, p.st, ref.Key)
	if head, err = readExact(r, l.pageOff, min(l.pageLen, streamChunk)); err != nil {
		return nil, err
	}
	h, hlen, herr := pqcheck.PageHeader(head)
	if herr != nil || int64(h.UncompressedPageSize) <= p.spillAbove {
		// A header past the first chunk, or damaged (the decode in
		// memory reports it); or a page that is not large.
		return head, errNotStreamed
	}
	sh, ok := streamShape(of, l, h)
	if !ok {
		return head, errNotStreamed
	}
	name := of.pq.Column(l.leaf)
	levels, compressed, err := of.pq.CheckPageHeader(l.rgi, l.leaf, h, 0)
	if err != nil {
		return nil, err
	}
	comp, uncomp := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if comp != l.pageLen-int64(hlen) {
		return nil, fmt.Errorf("column %s: the page at %d holds %d bytes after its header, the page index says %d (damaged page index)", name, l.pageOff, comp, l.pageLen-int64(hlen))
	}
	body := &pageBody{ctx: ctx, r: r, next: l.pageOff + int64(len(head)), end: l.pageOff + l.pageLen, buf: head[hlen:]}
	if h.CRC != 0 {
		body.crc = crc32.NewIEEE()
	}
	f, err := p.spill.create()
	if err != nil {
		return head, &spillError{err}
	}
	s := &spillFile{f: f, firstRow: l.pageFirst}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	w := blockcodec.NewWindow(spillOut{f}, 0, uncomp, streamWindow)
	if err := w.Literal(body, levels); err != nil {
		if isSpillError(err) {
			return head, err
		}
		return nil, fmt.Errorf("column %s: the levels of a page: %w", name, err)
	}
	codec := of.pq.Meta.RowGroups[l.rgi].Columns[l.leaf].MetaData.Codec
	if !compressed {
		codec = format.Uncompressed
	}
	br := bufio.NewReaderSize(body, 64<<10)
	if err := decodeStream(codec, br, w); err != nil {
		if errors.Is(err, errNotStreamed) {
			// A zstd window past streamZstdWindow: read again, whole.
			return nil, errNotStreamed
		}
		if isSpillError(err) {
			return head, err
		}
		return nil, fmt.Errorf("column %s: a %s page: %w", name, codec, err)
	}
	if err := w.Flush(); err != nil {
		return head, err // a spillError
	}
	if w.Len() != uncomp {
		return nil, fmt.Errorf("column %s: a page decodes to %d bytes, its header says %d", name, w.Len(), uncomp)
	}
	if err := body.finish(br, uint32(h.CRC)); err != nil {
		return nil, fmt.Errorf("column %s: %w", name, err)
	}
	if s.spans, err = sh.spans(f, uncomp); err != nil {
		return nil, fmt.Errorf("column %s: %w", name, err)
	}
	s.n = len(s.spans)
	if want := expectedValues(l.cc, l.pageFirst, true); want >= 0 && int64(s.n) != want {
		return nil, fmt.Errorf("column %s: the page of rows from %d holds %d values, the page index says %d (damaged page index)", name, l.pageFirst, s.n, want)
	}
	p.pages.Add(1)
	p.streamedPages.Add(1)
	if p.spill.keep(l.key, s, uncomp+int64(s.n)*16) {
		p.spilled.Add(1)
	}
	return nil, nil
}

// pageShape is what reading a streamed page's levels and values needs.
type pageShape struct {
	count    int64 // values in the page, nulls included
	enc      format.Encoding
	maxDef   int // 0 or 1
	v2       bool
	defBytes int64 // a v2 page's definition levels (after its repetition levels)
	repBytes int64
}

// streamEncoding: the encodings of values a streamed page may have, those
// whose values lie in the page as they are: PLAIN (each value after its
// length) and DELTA_LENGTH_BYTE_ARRAY (the lengths, then the values; what
// parquet-go, and so deltafs's writer, writes by default).
func streamEncoding(e format.Encoding) bool {
	return e == format.Plain || e == format.DeltaLengthByteArray
}

// streamShape reports whether the page with header h at l is decoded as
// a stream: a v1 or v2 data page of a flat, optional or required binary
// column in a streamEncoding, with RLE definition levels.
func streamShape(of *openFile, l *pageLoc, h *format.PageHeader) (pageShape, bool) {
	leaf := leafAt(of.f.Root(), l.leaf)
	if leaf == nil || leaf.MaxRepetitionLevel() != 0 || leaf.MaxDefinitionLevel() > 1 || leaf.Type().Kind() != parquet.ByteArray {
		return pageShape{}, false
	}
	sh := pageShape{maxDef: leaf.MaxDefinitionLevel()}
	switch {
	case h.Type == format.DataPage && h.DataPageHeader.Valid:
		v := &h.DataPageHeader.V
		if !streamEncoding(v.Encoding) || sh.maxDef == 1 && v.DefinitionLevelEncoding != format.RLE {
			return pageShape{}, false
		}
		sh.count, sh.enc = int64(v.NumValues), v.Encoding
	case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
		v := &h.DataPageHeaderV2.V
		if !streamEncoding(v.Encoding) {
			return pageShape{}, false
		}
		sh.v2, sh.count, sh.enc = true, int64(v.NumValues), v.Encoding
		sh.repBytes, sh.defBytes = int64(v.RepetitionLevelsByteLength), int64(v.DefinitionLevelsByteLength)
	default:
		return pageShape{}, false
	}
	return sh, true
}

// decodeStream decodes the compressed bytes from r into w.
func decodeStream(codec format.CompressionCodec, r *bufio.Reader, w *blockcodec.Window) error {
	var err error
	switch codec {
	case format.Uncompressed:
		_, err = w.ReadFrom(r)
	case format.Snappy:
		_, err = blockcodec.Snappy(r, w)
	case format.Lz4Raw:
		_, err = blockcodec.LZ4(r, w)
	case format.Gzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(r); err == nil {
			_, err = w.ReadFrom(zr)
		}
	case format.Brotli:
		_, err = w.ReadFrom(brotli.NewReader(r))
	case format.Zstd:
		var zr *zstd.Decoder
		zr, err = zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(streamZstdWindow))
		if err != nil {
			return err
		}
		defer zr.Close()
		_, err = w.ReadFrom(zr)
		if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return errNotStreamed
		}
	default: // LZ4 with Hadoop's framing, LZO: whole, in memory
		return errNotStreamed
	}
	return err
}

// spans reads a decoded page's levels and value lengths back from f
// (uncomp bytes) and returns where each value lies in f.
func (sh pageShape) spans(f *os.File, uncomp int64) ([]spillSpan, error) {
	if sh.count < 0 || sh.count > pqcheck.MaxPageValues {
		return nil, fmt.Errorf("a page claims %d values", sh.count)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, uncomp), 64<<10)
	pos := int64(0)
	read := func(n int64) ([]byte, error) {
		// Levels take at most two bytes a value (an RLE run header each).
		if n < 0 || n > 2*sh.count+16 || n > uncomp-pos {
			return nil, fmt.Errorf("a page claims %d bytes of levels for %d values", n, sh.count)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		pos += n
		return b, nil
	}
	var defs []byte
	if sh.v2 {
		if sh.repBytes != 0 {
			return nil, fmt.Errorf("a page of a column that is not repeated has %d bytes of repetition levels", sh.repBytes)
		}
		if sh.maxDef == 0 && sh.defBytes != 0 {
			return nil, fmt.Errorf("a page of a required column has %d bytes of definition levels", sh.defBytes)
		}
		if sh.maxDef == 1 {
			var err error
			if defs, err = read(sh.defBytes); err != nil {
				return nil, err
			}
		}
	} else if sh.maxDef == 1 {
		n, err := read(4)
		if err != nil {
			return nil, err
		}
		if defs, err = read(int64(binary.LittleEndian.Uint32(n))); err != nil {
			return nil, err
		}
	}
	var nulls []uint8
	if sh.maxDef == 1 {
		enc := rle.Encoding{BitWidth: 1}
		var err error
		if nulls, err = enc.DecodeLevels(nil, defs); err != nil {
			return nil, fmt.Errorf("the definition levels of a page: %v", err)
		}
		if int64(len(nulls)) < sh.count {
			return nil, fmt.Errorf("a page of %d values has %d definition levels", sh.count, len(nulls))
		}
	}
	spans := make([]spillSpan, sh.count)
	if sh.enc == format.DeltaLengthByteArray {
		return spans, deltaLengthSpans(br, pos, uncomp, spans, nulls)
	}
	var lb [4]byte
	for i := range spans {
		if nulls != nil {
			switch nulls[i] {
			case 0:
				spans[i].null = true
				continue
			case 1:
			default:
				return nil, fmt.Errorf("a definition level of %d in a column whose levels are at most 1", nulls[i])
			}
		}
		if _, err := io.ReadFull(br, lb[:]); err != nil {
			return nil, fmt.Errorf("a page of %d values ends at its value %d", sh.count, i)
		}
		pos += 4
		n := int64(binary.LittleEndian.Uint32(lb[:]))
		if n > uncomp-pos {
			return nil, fmt.Errorf("value %d of a page claims %d bytes, %d are left", i, n, uncomp-pos)
		}
		spans[i] = spillSpan{off: pos, n: n}
		if _, err := br.Discard(int(n)); err != nil {
			return nil, err
		}
		pos += n
	}
	if pos != uncomp {
		return nil, fmt.Errorf("a page of %d values holds %d bytes after them", sh.count, uncomp-pos)
	}
	return spans, nil
}

// pageBody reads a page's compressed bytes: first those read with its
// header, then the rest in ranged reads of streamChunk bytes, hashed for
// its CRC when it has one.
type pageBody struct {
	ctx       context.Context
	r         io.ReaderAt
	buf       []byte // read and not yet consumed
	next, end int64  // the rest, not yet read
	crc       hash.Hash32
	read      []byte // the buffer of the ranged reads
}

func (b *pageBody) Read(p []byte) (int, error) {
	if len(b.buf) == 0 {
		if b.next >= b.end {
			return 0, io.EOF
		}
		if err := b.ctx.Err(); err != nil {
			return 0, err
		}
		n := min(b.end-b.next, streamChunk)
		if b.read == nil {
			b.read = make([]byte, streamChunk)
		}
		got, err := b.r.ReadAt(b.read[:n], b.next)
		if int64(got) == n {
			err = nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the file ends inside its page
			}
			return 0, err
		}
		b.next += n
		b.buf = b.read[:n]
	}
	n := copy(p, b.buf)
	if b.crc != nil {
		b.crc.Write(b.buf[:n])
	}
	b.buf = b.buf[n:]
	return n, nil
}

// finish reads what the decoder left of the page through br, the reader
// it read from (nothing, for a page that decodes exactly), and checks the
// page's CRC.
func (b *pageBody) finish(br *bufio.Reader, crc uint32) error {
	left, err := io.Copy(io.Discard, br)
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("a page holds %d bytes past its compressed data", left)
	}
	if b.crc != nil && b.crc.Sum32() != crc {
		return fmt.Errorf("page checksum mismatch: the bytes read have CRC-32 %08x, the page header says %08x", b.crc.Sum32(), crc)
	}
	return nil
}

// deltaLengthSpans places the values of a DELTA_LENGTH_BYTE_ARRAY page,
// whose values section starts at pos of the uncomp bytes read by br: the
// lengths (DELTA_BINARY_PACKED, read into memory: a few bytes a value),
// then the values, which must end the page. nulls (nil: none) are the
// page's definition levels.
func deltaLengthSpans(br *bufio.Reader, pos, uncomp int64, spans []spillSpan, nulls []uint8) error {
	present := 0
	for i := range spans {
		if nulls == nil || nulls[i] == 1 {
			present++
		} else {
			spans[i].null = true
		}
	}
	// A length takes at most 5 bytes, and each block of 128 lengths at
	// most its own header's (a varint and a byte a miniblock).
	bound := min(uncomp-pos, 8*int64(present)+1<<20)
	head := make([]byte, bound)
	if _, err := io.ReadFull(br, head); err != nil {
		return fmt.Errorf("the value lengths of a page: %v", err)
	}
	end, err := binaryPackedLen(head, present)
	if err != nil {
		return fmt.Errorf("the value lengths of a page: %v", err)
	}
	var enc delta.BinaryPackedEncoding
	lengths, err := enc.DecodeInt32(nil, head[:end])
	if err != nil {
		return fmt.Errorf("the value lengths of a page: %v", err)
	}
	if len(lengths) != present {
		return fmt.Errorf("a page of %d values present has %d value lengths", present, len(lengths))
	}
	off := pos + int64(end)
	j := 0
	for i := range spans {
		if spans[i].null {
			continue
		}
		n := int64(lengths[j])
		j++
		if n < 0 || n > uncomp-off {
			return fmt.Errorf("value %d of a page claims %d bytes, %d are left", i, n, uncomp-off)
		}
		spans[i].off, spans[i].n = off, n
		off += n
	}
	if off != uncomp {
		return fmt.Errorf("a page of %d values holds %d bytes after them", len(spans), uncomp-off)
	}
	return nil
}

// binaryPackedLen is the length of the DELTA_BINARY_PACKED run at the
// start of src, counted as parquet-go's decoder consumes it (a last
// miniblock cut short is taken as it is): the lengths of a
// DELTA_LENGTH_BYTE_ARRAY page end there, and its values begin.
//
// A run that claims more than max values fails before anything is decoded
// (parquet-go's decoder allocates what the run claims).
func binaryPackedLen(src []byte, max int) (int, error) {
	pos := 0
	varint := func() (uint64, error) {
		v, n := binary.Uvarint(src[pos:])
		if n <= 0 {
			return 0, errors.New("a varint cut short or past 64 bits")
		}
		pos += n
		return v, nil
	}
	var hdr [4]uint64
	for i := range hdr { // block size, miniblocks, values, first value
		var err error
		if hdr[i], err = varint(); err != nil {
			return 0, err
		}
	}
	blockSize, minis, total := hdr[0], hdr[1], hdr[2]
	if total > uint64(max) {
		return 0, fmt.Errorf("a DELTA_BINARY_PACKED run claims %d values, the page holds %d", total, max)
	}
	if minis == 0 || blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 || (blockSize/minis)%32 != 0 || total > math.MaxInt32 {
		return 0, fmt.Errorf("a DELTA_BINARY_PACKED header of block size %d, %d miniblocks and %d values", blockSize, minis, total)
	}
	perMini := int(blockSize / minis)
	left := int(total) - 1
	for left > 0 && pos < len(src) {
		if _, err := varint(); err != nil { // the block's minimum delta
			return 0, err
		}
		widths := src[pos : pos+int(min(minis, uint64(len(src)-pos)))]
		pos += len(widths)
		for _, bw := range widths {
			n := min(perMini, left)
			if bw != 0 {
				pos += min(perMini*int(bw)/8, len(src)-pos)
			}
			if left -= n; left == 0 {
				break
			}
		}
	}
	if left > 0 {
		return 0, fmt.Errorf("a DELTA_BINARY_PACKED run of %d values ends after %d", total, int(total)-left)
	}
	return pos, nil
}

// spillOut is a spill file as the decoders' output, its failures marked
// as spillErrors: a full disk is no damaged page.
type spillOut struct{ f *os.File }

func (o spillOut) WriteAt(p []byte, off int64) (int, error) {
	n, err := o.f.WriteAt(p, off)
	if err != nil {
		err = &spillError{err}
	}
	return n, err
}

func (o spillOut) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.f.ReadAt(p, off)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) {
		err = &spillError{err}
	}
	return n, err
}

// spillError is a failure of a spill file (to be made, written or read
// back), not of the page.
type spillError struct{ err error }

func (e *spillError) Error() string { return "spill file: " + e.err.Error() }
func (e *spillError) Unwrap() error { return e.err }

func isSpillError(err error) bool {
	var se *spillError
	return errors.As(err, &se)
}
