package sample

import (
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"strconv"
	"strings"
)

// Image describes raw uint8 pixel arrays: H rows of W pixels of C channels
// (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), row-major, channels interleaved.
type Image struct {
	H, W, C int
}

// ParseImage parses "HxW" or "HxWxC".
func ParseImage(s string) (Image, error) {
	parts := strings.Split(strings.ToLower(s), "x")
	if len(parts) != 2 && len(parts) != 3 {
		return Image{}, fmt.Errorf("image shape %q: want HxW or HxWxC", s)
	}
	var v [3]int
	v[2] = 1
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 1<<16 {
			return Image{}, fmt.Errorf("image shape %q: %q is not a dimension in 1..65536", s, p)
		}
		v[i] = n
	}
	img := Image{H: v[0], W: v[1], C: v[2]}
	if img.C > 4 {
		return Image{}, fmt.Errorf("image shape %q: channels must be 1..4", s)
	}
	return img, nil
}

func (im Image) String() string { return fmt.Sprintf("%dx%dx%d", im.H, im.W, im.C) }

// Pixels is the byte length of one raw image.
func (im Image) Pixels() int64 { return int64(im.H) * int64(im.W) * int64(im.C) }

// Image formats.
const (
	FormatPNG = "png"
	FormatPNM = "pnm"
)

// The PNG encoding is deliberate: zlib with *stored* (uncompressed) deflate
// blocks and filter type 0 on every row. The file size is then a pure
// function of H, W and C, so stat sizes are exact without reading any pixels,
// and encoding is a copy plus two checksums. Every PNG decoder reads it.

const maxStored = 65535 // bytes per stored deflate block

func (im Image) rawLen() int64 { return int64(im.H) * (1 + int64(im.W)*int64(im.C)) }

func (im Image) zlibLen() int64 {
	raw := im.rawLen()
	blocks := (raw + maxStored - 1) / maxStored
	if blocks == 0 {
		blocks = 1
	}
	return 2 + raw + 5*blocks + 4
}

// PNGSize is the exact size of the PNG EncodePNG writes.
func (im Image) PNGSize() int64 {
	return 8 + (12 + 13) + (12 + im.zlibLen()) + 12
}

var pngColorType = [5]byte{0, 0, 4, 2, 6}

// EncodePNG encodes raw pixels (len im.Pixels()) as a PNG of PNGSize bytes,
// appended to dst.
func (im Image) EncodePNG(dst, pix []byte) []byte {
	dst = append(dst, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(im.W))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(im.H))
	ihdr[8] = 8 // bit depth
	ihdr[9] = pngColorType[im.C]
	dst = appendChunk(dst, "IHDR", ihdr[:])

	// IDAT: one chunk holding the whole zlib stream.
	zl := im.zlibLen()
	dst = binary.BigEndian.AppendUint32(dst, uint32(zl))
	start := len(dst)
	dst = append(dst, "IDAT"...)
	dst = append(dst, 0x78, 0x01) // zlib: deflate, 32K window, no dict, fastest
	stride := im.W * im.C
	raw := im.rawLen()
	adler := adler32.New()
	var zero = [1]byte{0}
	var written int64
	row, col := 0, -1 // col -1: the row's filter byte is next
	for written < raw || raw == 0 {
		n := raw - written
		if n > maxStored {
			n = maxStored
		}
		final := byte(0)
		if written+n == raw {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		for left := n; left > 0; {
			if col < 0 {
				dst = append(dst, 0)
				adler.Write(zero[:])
				col = 0
				left--
				continue
			}
			k := int64(stride - col)
			if k > left {
				k = left
			}
			seg := pix[row*stride+col : row*stride+col+int(k)]
			dst = append(dst, seg...)
			adler.Write(seg)
			col += int(k)
			left -= k
			if col == stride {
				row, col = row+1, -1
			}
		}
		written += n
		if raw == 0 {
			break
		}
	}
	dst = binary.BigEndian.AppendUint32(dst, adler.Sum32())
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
	return appendChunk(dst, "IEND", nil)
}

func appendChunk(dst []byte, typ string, data []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	start := len(dst)
	dst = append(dst, typ...)
	dst = append(dst, data...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// pnmHeader is the header of a binary PGM (C=1) or PPM (C=3).
func (im Image) pnmHeader() string {
	magic := "P5"
	if im.C == 3 {
		magic = "P6"
	}
	return fmt.Sprintf("%s\n%d %d\n255\n", magic, im.W, im.H)
}

// PNMSize is the exact size of the PGM/PPM EncodePNM writes.
func (im Image) PNMSize() int64 { return int64(len(im.pnmHeader())) + im.Pixels() }

// EncodePNM encodes raw pixels as binary PGM (C=1) or PPM (C=3).
func (im Image) EncodePNM(dst, pix []byte) []byte {
	dst = append(dst, im.pnmHeader()...)
	return append(dst, pix...)
}

// pnmExt is the extension of a PNM image.
func (im Image) pnmExt() string {
	if im.C == 3 {
		return ".ppm"
	}
	return ".pgm"
}
