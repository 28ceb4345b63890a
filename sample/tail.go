package sample

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// tailGuess is how much of a data file's end the first read takes: enough
// for the footer and the page index of typical files, so that opening a
// file costs one storage read.
const tailGuess = 64 << 10

// The tail of a data file is its footer and page index (column and offset
// indexes, which writers put just before the footer): everything a
// PageFetcher needs to open the file. It is read with one ranged read (a
// second only when it is larger than tailGuess) and kept in the BlobCache
// as kind "tail", so that a remount with a warm disk cache opens files
// without reading storage at all. Blob layout: 8 bytes little-endian file
// offset of the first byte held, then the bytes up to the end of the file.

func tailKey(ref FileRef) CacheKey {
	return CacheKey{Kind: "tail", File: ref.Path, Version: ref.identity()}
}

// readTail reads the tail of a file of size bytes through r.
func readTail(r io.ReaderAt, size int64) ([]byte, error) {
	if size < 12 {
		return nil, fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	off := max(0, size-tailGuess)
	buf, err := readExact(r, off, size-off)
	if err != nil {
		return nil, err
	}
	if string(buf[len(buf)-4:]) != "PAR1" {
		return nil, errors.New("no Parquet magic at the end of the file (not a Parquet file, or truncated)")
	}
	footer := int64(binary.LittleEndian.Uint32(buf[len(buf)-8:]))
	if footer+8 > size-4 {
		return nil, fmt.Errorf("footer length %d does not fit in a %d-byte file", footer, size)
	}
	if need := size - 8 - footer; need < off {
		// The footer is larger than the guess: read the rest.
		more, err := readExact(r, need, off-need)
		if err != nil {
			return nil, err
		}
		buf, off = append(more, buf...), need
	}
	// Find the page index from the footer; read whatever of it lies before.
	f, err := parquet.OpenFile(&tailReader{tail: buf, off: off}, size,
		parquet.SkipMagicBytes(true), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, err
	}
	start := size - 8 - footer // without a page index: the footer alone
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.OffsetIndexOffset > 0 {
				start = min(start, c.OffsetIndexOffset)
			}
			if c.ColumnIndexOffset > 0 {
				start = min(start, c.ColumnIndexOffset)
			}
		}
	}
	if start < off {
		more, err := readExact(r, start, off-start)
		if err != nil {
			return nil, err
		}
		buf, off = append(more, buf...), start
	}
	// Keep only the page index and the footer (the guess may have read
	// data pages too).
	buf, off = buf[start-off:], start
	out := make([]byte, 8+len(buf))
	binary.LittleEndian.PutUint64(out, uint64(off))
	copy(out[8:], buf)
	return out, nil
}

func readExact(r io.ReaderAt, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, off)
	if int64(got) == n {
		return buf, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("read %d bytes at %d: %w", n, off, err)
}

// parseTail splits a tail blob.
func parseTail(blob []byte) (tail []byte, off int64, err error) {
	if len(blob) < 8 {
		return nil, 0, errors.New("cached file tail is truncated")
	}
	return blob[8:], int64(binary.LittleEndian.Uint64(blob)), nil
}

// tailReader serves reads inside the tail from memory, and the rest from
// rest (nil: an error, used while the tail is being read).
type tailReader struct {
	tail []byte
	off  int64
	rest io.ReaderAt
}

func (t *tailReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= t.off && off+int64(len(p)) <= t.off+int64(len(t.tail)) {
		return copy(p, t.tail[off-t.off:]), nil
	}
	if t.rest == nil {
		return 0, fmt.Errorf("read of %d bytes at %d outside the file's footer", len(p), off)
	}
	return t.rest.ReadAt(p, off)
}
