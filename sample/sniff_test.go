package sample

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// Real files written by Pillow 9.4 (2x2 images), as hex.
const (
	pillowBMP  = "424d460000000000000036000000280000000200000002000000010018000000000010000000c40e0000c40e0000000000000000000009080709080700000908070908070000"
	pillowTIFF = "49492a0008000000090000010400010000000200000001010400010000000200000002010300010000000800000003010300010000000100000006010300010000000100000011010400010000007a0000001601040001000000020000001701040001000000040000001c01030001000000010000000000000007070707"
	pillowWebP = "524946461e000000574542505650384c110000002f0140000007d0831ef4a0ff8188e87f0000"
)

func TestSniffExt(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 3, 2))
	encode := func(f func(*bytes.Buffer) error) []byte {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gifData := encode(func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) })
	// A big-endian TIFF header: byte order "MM", 42, first IFD at 8.
	bigTIFF := []byte("MM\x00*\x00\x00\x00\x08\x00\x00")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"png", encode(func(b *bytes.Buffer) error { return png.Encode(b, img) }), ".png"},
		{"jpeg", encode(func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) }), ".jpg"},
		{"gif89a", gifData, ".gif"},
		{"gif87a", append([]byte("GIF87a"), gifData[6:]...), ".gif"},
		{"bmp", unhex(pillowBMP), ".bmp"},
		{"webp", unhex(pillowWebP), ".webp"},
		{"tiff little-endian", unhex(pillowTIFF), ".tif"},
		{"tiff big-endian", bigTIFF, ".tif"},
		// Near misses.
		{"empty", nil, ""},
		{"BM too short for a BMP header", []byte("BM\x00\x00\x00"), ""},
		{"RIFF but WAVE", []byte("RIFF\x24\x00\x00\x00WAVEfmt "), ""},
		{"RIFF truncated", []byte("RIFF\x24\x00\x00\x00WEB"), ""},
		{"GIF without version", []byte("GIF8"), ""},
		{"BigTIFF (version 43) is not sniffed", []byte("II+\x00\x08\x00\x00\x00"), ""},
		{"text", []byte("hello, world"), ""},
	} {
		if got := sniffExt(tc.data); got != tc.want {
			t.Errorf("%s: sniffExt = %q, want %q", tc.name, got, tc.want)
		}
		// What indexing sees of a large value (page.Fetcher.Heads): its
		// first sniffBytes and its size.
		if got := sniffHead(tc.data[:min(len(tc.data), sniffBytes)], int64(len(tc.data))); got != tc.want {
			t.Errorf("%s: sniffHead of the first %d bytes = %q, want %q", tc.name, sniffBytes, got, tc.want)
		}
	}
}

// TestSniffRawValues: raw values are not taken for images: 16-byte
// records whose first bytes happen to read "BM", "II*\0" or "\xff\xd8\xff"
// are not BMP, TIFF or JPEG headers.
func TestSniffRawValues(t *testing.T) {
	var b [16]byte
	for i := range 1 << 21 {
		binary.LittleEndian.PutUint64(b[0:], uint64(i))
		binary.LittleEndian.PutUint64(b[8:], uint64(7*i))
		if ext := sniffExt(b[:]); ext != "" {
			t.Fatalf("record %d (% x) sniffed as %s", i, b, ext)
		}
	}
	for _, p := range [][]byte{[]byte("BM\x42\x4d"), []byte("II*\x00\x00\x00\x00\x00"), []byte("\xff\xd8\xffj")} {
		if ext := sniffExt(p); ext != "" {
			t.Errorf("% x sniffed as %s", p, ext)
		}
	}
}
