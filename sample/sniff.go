package sample

import (
	"bytes"
	"encoding/binary"
	"path"
	"strings"
)

// sniffExt returns the extension of an image format recognised from the
// first bytes of data (PNG, JPEG, GIF, BMP, WebP, TIFF), or "". Formats
// with short magic numbers (BMP's two bytes, TIFF's four) are also checked
// for a well-formed header, so that raw values (16 bytes of a tensor, say)
// are not taken for images by chance.
func sniffExt(data []byte) string { return sniffHead(data, int64(len(data))) }

// sniffHead is sniffExt for a value of size bytes of which data are the
// first (at least sniffBytes of them, when it has as many).
func sniffHead(data []byte, size int64) string {
	if len(data) < 4 {
		return ""
	}
	switch data[0] { // the first byte of every magic below
	case 0x89, 0xff, 'G', 'B', 'R', 'I', 'M':
	default:
		return ""
	}
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return ".png"
	case len(data) >= 4 && bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}) && jpegMarker(data[3]):
		return ".jpg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return ".gif"
	case bytes.HasPrefix(data, []byte("BM")) && bmpHeader(data):
		return ".bmp"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return ".webp"
	case bytes.HasPrefix(data, []byte("II*\x00")) && len(data) >= 8 && tiffOffset(binary.LittleEndian.Uint32(data[4:]), size),
		bytes.HasPrefix(data, []byte("MM\x00*")) && len(data) >= 8 && tiffOffset(binary.BigEndian.Uint32(data[4:]), size):
		return ".tif"
	}
	return ""
}

// jpegMarker reports whether b can follow a JPEG's start of image: the
// marker of an APPn, quantisation or Huffman table, frame or comment
// segment.
func jpegMarker(b byte) bool {
	return b >= 0xe0 && b <= 0xef || b >= 0xc0 && b <= 0xcf || b == 0xdb || b == 0xdd || b == 0xfe
}

// bmpHeader checks a BMP's file header and the size of its info header.
func bmpHeader(data []byte) bool {
	if len(data) < 26 {
		return false
	}
	if binary.LittleEndian.Uint32(data[6:]) != 0 { // reserved
		return false
	}
	switch binary.LittleEndian.Uint32(data[14:]) { // info header size
	case 12, 40, 52, 56, 64, 108, 124:
	default:
		return false
	}
	off := binary.LittleEndian.Uint32(data[10:]) // pixel data offset
	return off >= 26 && int64(off) <= int64(len(data))
}

// tiffOffset checks a TIFF's first IFD offset.
func tiffOffset(off uint32, n int64) bool { return off >= 8 && int64(off) < n }

// sniffBytes is the most bytes of a value sniffHead looks at.
const sniffBytes = 64

// pathExt is the extension of a path column value, made safe: lower case,
// at most 16 bytes, letters and digits only; "" when there is none.
func pathExt(p string) string {
	ext := strings.ToLower(path.Ext(p))
	if len(ext) < 2 || len(ext) > 16 {
		return ""
	}
	for _, c := range ext[1:] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}
