// Package blockcodec decodes snappy and LZ4 blocks as streams, into a
// file, in memory bounded independently of the block's size.
//
// Parquet compresses each page as one block, and the libraries parquet-go
// uses decode a block only whole, into a buffer of its decoded size: a page
// holding one 1 GiB sample needs its compressed and decoded bytes in memory
// at once. These decoders read the compressed bytes from a reader and write
// the decoded bytes to a file as they go, keeping only a window of the most
// recent bytes in memory; a copy reaching further back than the window (a
// snappy block may refer to any earlier byte) reads the bytes back from the
// file. What they accept is what the reference decoders accept: standard
// snappy as github.com/klauspost/compress/snappy.DecodeStrict decodes it
// (without s2's extensions), LZ4 blocks as github.com/pierrec/lz4 decodes
// them; the fuzz tests hold them to that.
package blockcodec

import (
	"errors"
	"fmt"
	"io"
)

// Output is where a stream is decoded to: a file, written at increasing
// offsets and read back for copies that reach past the window.
type Output interface {
	io.WriterAt
	io.ReaderAt
}

// ErrCorrupt: the block is not a valid block of its codec.
var ErrCorrupt = errors.New("corrupt block")

// A Window holds the decoded bytes not yet written to the output and the
// most recent ones already written (up to keep of them), so that copies
// from near the end cost no read of the output.
type Window struct {
	out     Output
	base    int64  // out's offset of the stream's first byte
	limit   int64  // the stream may not decode to more bytes than this
	keep    int    // bytes kept in buf after a flush
	buf     []byte // stream bytes [flushed, flushed+len(buf)); cap 2*keep
	flushed int64
	tmp     []byte // for bytes read back from out
}

// NewWindow returns a window writing a stream of at most limit bytes to
// out from offset base, keeping keep bytes in memory (at least 64 KiB, the
// farthest an LZ4 copy reaches).
func NewWindow(out Output, base, limit int64, keep int) *Window {
	keep = max(keep, 64<<10)
	return &Window{out: out, base: base, limit: limit, keep: keep, buf: make([]byte, 0, 2*keep)}
}

// Len is the count of bytes decoded so far.
func (w *Window) Len() int64 { return w.flushed + int64(len(w.buf)) }

// room makes room in buf for at least one byte, writing its oldest bytes
// to the output.
func (w *Window) room() error {
	if len(w.buf) < cap(w.buf) {
		return nil
	}
	n := len(w.buf) - w.keep
	if _, err := w.out.WriteAt(w.buf[:n], w.base+w.flushed); err != nil {
		return err
	}
	w.flushed += int64(n)
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	return nil
}

func (w *Window) grow(n int64) error {
	if n < 0 || n > w.limit-w.Len() {
		return fmt.Errorf("%w: it decodes to more than %d bytes", ErrCorrupt, w.limit)
	}
	return nil
}

// Literal appends n bytes read from r.
func (w *Window) Literal(r io.Reader, n int64) error {
	if err := w.grow(n); err != nil {
		return err
	}
	for n > 0 {
		if err := w.room(); err != nil {
			return err
		}
		k := min(n, int64(cap(w.buf)-len(w.buf)))
		at := len(w.buf)
		w.buf = w.buf[:at+int(k)]
		if _, err := io.ReadFull(r, w.buf[at:]); err != nil {
			w.buf = w.buf[:at]
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: a literal runs past the end of the block", ErrCorrupt)
			}
			return err
		}
		n -= k
	}
	return nil
}

// Copy appends n bytes copied from off bytes back (off may be less than
// n: the bytes copied then repeat).
func (w *Window) Copy(off, n int64) error {
	if off <= 0 || off > w.Len() {
		return fmt.Errorf("%w: a copy from %d bytes back, %d decoded", ErrCorrupt, off, w.Len())
	}
	if err := w.grow(n); err != nil {
		return err
	}
	src := w.Len() - off // the stream offset copied from
	for n > 0 {
		if err := w.room(); err != nil {
			return err
		}
		free := int64(cap(w.buf) - len(w.buf))
		var k int64
		if src >= w.flushed {
			i := src - w.flushed
			k = min(n, int64(len(w.buf))-i, free)
			w.buf = append(w.buf, w.buf[i:i+k]...)
		} else {
			if w.tmp == nil {
				w.tmp = make([]byte, 64<<10)
			}
			k = min(n, w.flushed-src, int64(len(w.tmp)), free)
			if _, err := w.out.ReadAt(w.tmp[:k], w.base+src); err != nil {
				return err
			}
			w.buf = append(w.buf, w.tmp[:k]...)
		}
		src += k
		n -= k
	}
	return nil
}

// Flush writes every byte still in memory to the output.
func (w *Window) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.out.WriteAt(w.buf, w.base+w.flushed); err != nil {
		return err
	}
	w.flushed += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// ReadFrom appends every byte r gives until its end (a stream another
// decoder produces), failing past the window's limit.
func (w *Window) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if err := w.room(); err != nil {
			return total, err
		}
		at := len(w.buf)
		n, err := r.Read(w.buf[at:cap(w.buf)])
		if int64(n) > w.limit-w.Len() {
			return total, fmt.Errorf("%w: it decodes to more than %d bytes", ErrCorrupt, w.limit)
		}
		w.buf = w.buf[:at+n]
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
