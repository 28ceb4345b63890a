package sample

import (
	"bytes"
	"path"
	"strings"
)

// sniffExt returns the extension of an image format recognised from the
// first bytes of data (PNG, JPEG, GIF, BMP, WebP, TIFF), or "".
func sniffExt(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return ".png"
	case bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}):
		return ".jpg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return ".gif"
	case bytes.HasPrefix(data, []byte("BM")) && len(data) >= 14:
		return ".bmp"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return ".webp"
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return ".tif"
	}
	return ""
}

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
