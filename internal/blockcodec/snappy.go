package blockcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Snappy decodes one standard snappy block (the format Parquet's SNAPPY
// codec uses: a varint of the decoded length, then literals and copies)
// from r into w, and returns its decoded length. The block must be all of
// r: bytes after it are an error, as they are to the reference decoder.
func Snappy(r io.ByteReader, w *Window) (int64, error) {
	v, err := binary.ReadUvarint(r)
	if err != nil || v > 0xffffffff {
		return 0, fmt.Errorf("%w: no length", ErrCorrupt)
	}
	n := int64(v)
	if n > w.limit-w.Len() {
		return 0, fmt.Errorf("%w: it claims %d bytes, at most %d are expected", ErrCorrupt, n, w.limit-w.Len())
	}
	end := w.Len() + n
	lit := byteReader{r}
	var b [4]byte
	for w.Len() < end {
		tag, err := r.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("%w: it ends after %d of its %d bytes", ErrCorrupt, n-(end-w.Len()), n)
		}
		var length, off int64
		switch tag & 3 {
		case 0: // literal
			x := uint32(tag >> 2)
			if x >= 60 {
				k := int(x - 59)
				if err := readFull(r, b[:k]); err != nil {
					return 0, err
				}
				x = 0
				for i := k - 1; i >= 0; i-- {
					x = x<<8 | uint32(b[i])
				}
			}
			length = int64(x) + 1
			if length > end-w.Len() {
				return 0, fmt.Errorf("%w: a literal runs past the decoded length", ErrCorrupt)
			}
			if err := w.Literal(lit, length); err != nil {
				return 0, err
			}
			continue
		case 1:
			if err := readFull(r, b[:1]); err != nil {
				return 0, err
			}
			length = 4 + int64(tag>>2&7)
			off = int64(tag&0xe0)<<3 | int64(b[0])
		case 2:
			if err := readFull(r, b[:2]); err != nil {
				return 0, err
			}
			length = 1 + int64(tag>>2)
			off = int64(binary.LittleEndian.Uint16(b[:2]))
		case 3:
			if err := readFull(r, b[:4]); err != nil {
				return 0, err
			}
			length = 1 + int64(tag>>2)
			off = int64(binary.LittleEndian.Uint32(b[:4]))
		}
		if length > end-w.Len() {
			return 0, fmt.Errorf("%w: a copy runs past the decoded length", ErrCorrupt)
		}
		if err := w.Copy(off, length); err != nil {
			return 0, err
		}
	}
	if _, err := r.ReadByte(); err == nil {
		return 0, fmt.Errorf("%w: bytes after its %d decoded bytes", ErrCorrupt, n)
	}
	return n, nil
}

// readFull reads len(p) bytes from r; too few is a corrupt block.
func readFull(r io.ByteReader, p []byte) error {
	for i := range p {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: it ends inside an element", ErrCorrupt)
			}
			return err
		}
		p[i] = c
	}
	return nil
}

// byteReader reads from an io.ByteReader that may also be an io.Reader
// (a bufio.Reader), a byte at a time otherwise.
type byteReader struct{ r io.ByteReader }

func (b byteReader) Read(p []byte) (int, error) {
	if r, ok := b.r.(io.Reader); ok {
		return r.Read(p)
	}
	for i := range p {
		c, err := b.r.ReadByte()
		if err != nil {
			return i, err
		}
		p[i] = c
	}
	return len(p), nil
}
