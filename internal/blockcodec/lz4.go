package blockcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// LZ4 decodes one LZ4 block (the format of Parquet's LZ4_RAW codec:
// sequences of literals and a match of at most 64 KiB back, the last
// sequence literals only, though a block ending after a match is taken as
// the reference decoder takes it) from r, which must hold the block and nothing
// else, into w, and returns its decoded length.
func LZ4(r io.ByteReader, w *Window) (int64, error) {
	start := w.Len()
	lit := byteReader{r}
	first := true
	for {
		token, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			if first {
				return 0, nil // an empty block: no bytes, as the reference decodes it
			}
			// The format ends a block with literals, but the reference
			// decoder also takes a block that ends after a match.
			return w.Len() - start, nil
		}
		if err != nil {
			return 0, err
		}
		first = false
		n, err := lz4Length(r, int64(token>>4))
		if err != nil {
			return 0, err
		}
		if n > 0 {
			if err := w.Literal(lit, n); err != nil {
				return 0, err
			}
		}
		var b [2]byte
		c, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			if token&0xf == 0 {
				return w.Len() - start, nil
			}
			return 0, fmt.Errorf("%w: it ends before a match's offset", ErrCorrupt)
		}
		if err != nil {
			return 0, err
		}
		b[0] = c
		if err := readFull(r, b[1:]); err != nil {
			return 0, err
		}
		off := int64(binary.LittleEndian.Uint16(b[:]))
		if off == 0 {
			return 0, fmt.Errorf("%w: a match at offset 0", ErrCorrupt)
		}
		m, err := lz4Length(r, int64(token&0xf))
		if err != nil {
			return 0, err
		}
		if off > w.Len()-start {
			return 0, fmt.Errorf("%w: a match from %d bytes back, %d decoded", ErrCorrupt, off, w.Len()-start)
		}
		if err := w.Copy(off, m+4); err != nil {
			return 0, err
		}
	}
}

// lz4Length reads the rest of a literal or match length whose token
// nibble is n (15: bytes follow, each added, until one below 255).
func lz4Length(r io.ByteReader, n int64) (int64, error) {
	if n != 15 {
		return n, nil
	}
	for {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("%w: it ends inside a length", ErrCorrupt)
			}
			return 0, err
		}
		n += int64(c)
		if n > 1<<40 {
			return 0, fmt.Errorf("%w: a length past any block", ErrCorrupt)
		}
		if c != 255 {
			return n, nil
		}
	}
}
