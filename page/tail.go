package page

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/deltafs/deltafs/internal/pqcheck"
)

// tailGuess is how much of a data file's end the first read takes: enough
// for the footer and the page index of typical files, so that opening a
// file costs one storage read.
const tailGuess = pqcheck.TailGuess

// The tail of a data file is its footer and page index (column and offset
// indexes, which writers put just before the footer): everything a
// Fetcher needs to open the file. It is read with one ranged read (a
// second only when it is larger than tailGuess) and kept in the Cache
// as kind "tail", so that a remount with a warm disk cache opens files
// without reading storage at all. Blob layout: 8 bytes little-endian file
// offset of the first byte held, then the bytes up to the end of the file.
//
// Every size the footer and page index claim is checked (package pqcheck)
// before the tail is kept, and again, in memory, each time parquet-go
// opens the file from it.

// tailKey is the key of ref's tail.
func tailKey(ref FileRef) Key {
	return ref.CacheKey("tail", "", "")
}

// readTail reads and checks the tail of a file of size bytes through r.
func readTail(r io.ReaderAt, size int64) ([]byte, error) {
	tail, off, _, err := pqcheck.ReadTail(r, size)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 8+len(tail))
	binary.LittleEndian.PutUint64(out, uint64(off))
	copy(out[8:], tail)
	return out, nil
}

// readExact reads n bytes at off through r.
func readExact(r io.ReaderAt, off, n int64) ([]byte, error) { return pqcheck.ReadExact(r, off, n) }

// parseTail splits a tail blob.
func parseTail(blob []byte) (tail []byte, off int64, err error) {
	if len(blob) < 8 {
		return nil, 0, errors.New("cached file tail is truncated")
	}
	return blob[8:], int64(binary.LittleEndian.Uint64(blob)), nil
}
