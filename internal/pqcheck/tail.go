package pqcheck

import (
	"errors"
	"fmt"
	"io"
)

// TailGuess is how much of a file's end ReadTail reads first: enough for
// the footer and page index of typical data files, so that opening one
// costs a single read.
const TailGuess = 64 << 10

// ReadTail reads the end of a Parquet file of size bytes through r — its
// page index and footer, with one read of TailGuess bytes, a second when
// the footer is larger, a third when the page index lies further back —
// and checks them (Footer, CheckPageIndex). Every read is sized by the
// file's size and the limits, never by a number the file claims before it
// is checked. It returns the bytes from off (the page index's start, or
// the footer's) to the end of the file.
func ReadTail(r io.ReaderAt, size int64) (tail []byte, off int64, f *File, err error) {
	if size < 12 {
		return nil, 0, nil, fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	off = max(0, size-TailGuess)
	if tail, err = ReadExact(r, off, size-off); err != nil {
		return nil, 0, nil, err
	}
	f, err = Footer(tail, size)
	if short := (*shortTailError)(nil); errors.As(err, &short) {
		// The footer is larger than the guess (Footer checked its length
		// against the file and MaxFooterBytes): read the rest.
		need := size - 8 - footerLen(tail)
		var more []byte
		if more, err = ReadExact(r, need, off-need); err != nil {
			return nil, 0, nil, err
		}
		tail, off = append(more, tail...), need
		f, err = Footer(tail, size)
	}
	if err != nil {
		return nil, 0, nil, err
	}
	start := f.IndexStart()
	if size-start > MaxTailBytes {
		return nil, 0, nil, fmt.Errorf("the page index and footer take %d bytes, over the limit of %d MiB", size-start, MaxTailBytes>>20)
	}
	if start < off {
		more, err := ReadExact(r, start, off-start)
		if err != nil {
			return nil, 0, nil, err
		}
		tail, off = append(more, tail...), start
	}
	// Keep only the page index and the footer (the guess may have read
	// data pages too).
	tail, off = tail[start-off:], start
	if err := f.CheckPageIndex(tail, off); err != nil {
		return nil, 0, nil, err
	}
	return tail, off, f, nil
}

// Tail checks a tail ReadTail returned (kept in a cache, say): the footer
// and the page index, again.
func Tail(tail []byte, off, size int64) (*File, error) {
	if off < 0 || off+int64(len(tail)) != size {
		return nil, fmt.Errorf("the tail of %d bytes at %d is not the end of a %d-byte file", len(tail), off, size)
	}
	f, err := Footer(tail, size)
	if err != nil {
		return nil, err
	}
	if err := f.CheckPageIndex(tail, off); err != nil {
		return nil, err
	}
	return f, nil
}

// ReadExact reads n bytes at off through r.
func ReadExact(r io.ReaderAt, off, n int64) ([]byte, error) {
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
