package pqcheck

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// checkBody checks that data, a page's compressed bytes, decodes under
// codec to at most n bytes, its claimed uncompressed size. parquet-go
// decodes into a buffer of n bytes, but its codecs go on past it: snappy
// allocates the length its stream claims; zstd the content size its
// frames claim, and more as blocks expand (up to 64 GiB); gzip and brotli
// grow their output until the stream ends; lz4 doubles its buffer for as
// long as the block fails to decode, without end on a damaged block. So:
//
//   - snappy: the length its stream starts with (the length it decodes
//     to exactly) must be at most n; no decoding.
//   - zstd, gzip, brotli, lz4_raw: the page is decoded once here, by the
//     libraries parquet-go uses, into at most n bytes (zstd and lz4 into a
//     buffer of n bytes, gzip and brotli streamed and discarded); more
//     output, or a stream these decoders refuse, fails the page. This
//     costs a second decompression of such pages; snappy, the codec of
//     nearly every Delta table, costs none.
//
// The libraries parquet-go uses are the ones used here, so a page that
// passes decodes the same way there.
func checkBody(codec format.CompressionCodec, data []byte, n int64) error {
	switch codec {
	case format.Snappy:
		dlen, err := snappy.DecodedLen(data)
		if err != nil {
			return fmt.Errorf("a snappy page: %v", err)
		}
		if int64(dlen) > n {
			return fmt.Errorf("a snappy page claims %d bytes, its header %d", dlen, n)
		}
	case format.Zstd:
		buf := getBuf(n)
		defer putBuf(buf)
		if _, err := zstdDecoder().DecodeAll(data, (*buf)[:0:n]); err != nil {
			return fmt.Errorf("a zstd page does not decode to at most its %d bytes: %v", n, err)
		}
	case format.Lz4Raw:
		buf := getBuf(n)
		defer putBuf(buf)
		if _, err := lz4.UncompressBlock(data, (*buf)[:n]); err != nil {
			return fmt.Errorf("an lz4 page does not decode to at most its %d bytes: %v", n, err)
		}
	case format.Gzip:
		zr := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(zr)
		if err := zr.Reset(bytes.NewReader(data)); err != nil {
			return fmt.Errorf("a gzip page: %v", err)
		}
		return drain("gzip", zr, n)
	case format.Brotli:
		return drain("brotli", brotli.NewReader(bytes.NewReader(data)), n)
	}
	return nil
}

// drain reads r to its end, failing when it gives more than n bytes.
func drain(codec string, r io.Reader, n int64) error {
	got, err := io.Copy(io.Discard, io.LimitReader(r, n+1))
	if err != nil {
		return fmt.Errorf("a %s page: %v", codec, err)
	}
	if got > n {
		return fmt.Errorf("a %s page decodes to more than its %d bytes", codec, n)
	}
	return nil
}

var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// zstdDecoder is shared: DecodeAll is safe for concurrent use. It never
// writes past the capacity it is given.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxMemory(MaxPageBytes))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
})

// bufs holds decode buffers, so that checking a chunk's pages does not
// allocate one per page.
var bufs sync.Pool

func getBuf(n int64) *[]byte {
	if b, ok := bufs.Get().(*[]byte); ok && int64(cap(*b)) >= n {
		return b
	}
	b := make([]byte, n)
	return &b
}

func putBuf(b *[]byte) { bufs.Put(b) }
