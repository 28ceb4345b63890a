package blockcodec

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

// memOut is an Output in memory, counting the bytes read back.
type memOut struct {
	b        []byte
	readBack int64
}

func (m *memOut) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memOut) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, io.ErrUnexpectedEOF
	}
	m.readBack += int64(len(p))
	return copy(p, m.b[off:]), nil
}

// decode decodes block with dec into memory with a window of keep bytes,
// after base bytes of something else, and returns the decoded bytes.
func decode(dec func(io.ByteReader, *Window) (int64, error), block []byte, base, limit int64, keep int) ([]byte, *memOut, error) {
	out := &memOut{b: make([]byte, base)}
	w := NewWindow(out, base, limit, keep)
	n, err := dec(bufio.NewReaderSize(bytes.NewReader(block), 4096), w)
	if err != nil {
		return nil, out, err
	}
	if err := w.Flush(); err != nil {
		return nil, out, err
	}
	if n != w.Len() || int64(len(out.b)) != base+n {
		return nil, out, errors.New("length mismatch")
	}
	return out.b[base:], out, nil
}

func testData(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, size)
	for len(b) < size {
		switch rng.IntN(4) {
		case 0: // noise
			for range 1 + rng.IntN(3000) {
				b = append(b, byte(rng.Uint32()))
			}
		case 1: // a run
			c := byte(rng.Uint32())
			for range 1 + rng.IntN(70000) {
				b = append(b, c)
			}
		default: // a repeat of something earlier, near or far
			if len(b) > 0 {
				from := rng.IntN(len(b))
				n := min(1+rng.IntN(5000), len(b)-from)
				b = append(b, b[from:from+n]...)
			}
		}
	}
	return b[:size]
}

// Blocks of every codec decode to the bytes they encode, through windows
// smaller than the reach of their copies (s2's snappy-compatible blocks
// copy from megabytes back, read back from the output).
func TestRoundTrip(t *testing.T) {
	data := testData(6 << 20)
	lzBlock := make([]byte, lz4.CompressBlockBound(len(data)))
	n, err := lz4.CompressBlock(data, lzBlock, nil)
	if err != nil || n == 0 {
		t.Fatal(err, n)
	}
	lzBlock = lzBlock[:n]
	for _, tc := range []struct {
		name  string
		dec   func(io.ByteReader, *Window) (int64, error)
		block []byte
		far   bool // copies reach past the window
	}{
		{"snappy", Snappy, snappy.Encode(nil, data), false},
		{"snappy better (s2, far copies)", Snappy, s2.EncodeSnappyBetter(nil, data), true},
		{"snappy best (s2, far copies)", Snappy, s2.EncodeSnappyBest(nil, data), true},
		{"lz4", LZ4, lzBlock, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := decode(tc.dec, tc.block, 17, int64(len(data)), 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("decoded bytes differ")
			}
			if tc.far && out.readBack == 0 {
				t.Fatal("no copy read back from the output: the test does not reach past the window")
			}
			// One byte less allowed than the block decodes to: refused.
			if _, _, err := decode(tc.dec, tc.block, 0, int64(len(data))-1, 64<<10); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("limit below the decoded size: %v", err)
			}
		})
	}
}

// Damaged blocks fail; none decodes to other bytes silently.
func TestDamaged(t *testing.T) {
	data := testData(300 << 10)
	sn := snappy.Encode(nil, data)
	for name, b := range map[string][]byte{
		"snappy truncated":       sn[:len(sn)-1],
		"snappy trailing byte":   append(append([]byte{}, sn...), 0),
		"snappy empty":           {},
		"snappy copy before all": {10, 0x01 | 7<<2, 5}, // length 10, copy of 11 at offset 5 with nothing decoded
		"snappy offset 0":        {10, 0, 'a', 0x01, 0},
		"lz4 offset 0":           {0x10, 'a', 0, 0},
		"lz4 match past start":   {0x10, 'a', 9, 0},
		"lz4 ends in length":     {0xf0, 255},
	} {
		dec := Snappy
		if name[:3] == "lz4" {
			dec = LZ4
		}
		if got, _, err := decode(dec, b, 0, 1<<20, 64<<10); err == nil {
			t.Errorf("%s: decoded %d bytes, want an error", name, len(got))
		}
	}
}

// FuzzSnappy: the streaming decoder accepts exactly the blocks the strict
// reference decoder accepts, and decodes them to the same bytes.
func FuzzSnappy(f *testing.F) {
	f.Add(snappy.Encode(nil, testData(5000)))
	f.Add(s2.EncodeSnappyBest(nil, testData(200000)))
	f.Add([]byte{3, 8, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, block []byte) {
		const limit = 1 << 20
		n, err := snappy.DecodedLen(block)
		if err != nil || n > limit {
			return
		}
		want, werr := snappy.DecodeStrict(nil, block)
		got, _, gerr := decode(Snappy, block, 3, limit, 64<<10)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("reference: %v, streaming: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatal("decoded bytes differ")
		}
	})
}

// FuzzLZ4: the same against pierrec/lz4's block decoder, with a limit on
// the decoded size as parquet-go decodes (into a buffer of the page's
// uncompressed size).
func FuzzLZ4(f *testing.F) {
	for _, size := range []int{100, 70000} {
		d := testData(size)
		b := make([]byte, lz4.CompressBlockBound(len(d)))
		n, _ := lz4.CompressBlock(d, b, nil)
		f.Add(b[:n], uint32(size))
	}
	f.Add([]byte{0x10, 'a', 1, 0}, uint32(100))
	f.Fuzz(func(t *testing.T, block []byte, limit uint32) {
		limit %= 1 << 18
		dst := make([]byte, int(limit)+64) // slack: the reference copies 16 bytes at a time near the end
		n, werr := lz4.UncompressBlock(block, dst)
		if werr == nil && n > int(limit) {
			werr = errors.New("past the limit")
		}
		got, _, gerr := decode(LZ4, block, 5, int64(limit), 64<<10)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("reference: %v (%d bytes), streaming: %v", werr, n, gerr)
		}
		if werr == nil && !bytes.Equal(got, dst[:n]) {
			t.Fatal("decoded bytes differ")
		}
	})
}
