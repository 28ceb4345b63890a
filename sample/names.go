package sample

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deltafs/deltafs/extents"
)

// MaxNameBytes is the longest file name Linux accepts.
const MaxNameBytes = 255

// nameReserve is room kept for a duplicate suffix ("~123456") so that a
// disambiguated name still fits.
const nameReserve = 8

// EscapeName turns any value into a safe file-name component, reversibly
// (UnescapeName undoes it for every name EscapeName did not truncate):
//
//   - '%' and '~' (the duplicate marker), '/', NUL, other ASCII control bytes
//     and bytes that are not valid UTF-8 become %XX (upper-case hex);
//   - a leading '.' becomes %2E, so no name is hidden, "." or "..";
//   - the empty string becomes "%" alone (no %XX escape is a lone '%').
//
// EscapeName does not bound the length: see fitName. The value NullName
// itself escapes its first byte ("%5F_null__"), so that a null and the
// literal text "__null__" never share a name.
func EscapeName(s string) string {
	if s == "" {
		return "%"
	}
	if s == NullName {
		return escapeFirst(s)
	}
	var b strings.Builder
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		if needsEscape(c, r, size, i) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		if needsEscape(c, r, size, i) {
			// Escape a single byte; an invalid sequence advances by one.
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

const hexUpper = "0123456789ABCDEF"

func needsEscape(c byte, r rune, size, i int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case c < 0x20 || c == 0x7f:
		return true
	case c == '%' || c == '~' || c == '/':
		return true
	case c == '.' && i == 0:
		return true
	}
	return false
}

// UnescapeName reverses EscapeName. It fails on a malformed escape.
func UnescapeName(name string) (string, bool) {
	if name == "%" {
		return "", true
	}
	if !strings.Contains(name, "%") {
		return name, true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// fitName bounds an escaped stem so that stem + a duplicate suffix + ext
// fits in MaxNameBytes. An over-long stem keeps a prefix (never cutting an
// escape or a UTF-8 sequence) and gets "~h" and 16 hex digits of the
// SHA-256 of the full stem, so distinct long ids stay distinct.
func fitName(stem, ext string) string {
	limit := MaxNameBytes - len(ext) - nameReserve
	if len(stem) <= limit {
		return stem
	}
	sum := sha256.Sum256([]byte(stem))
	suffix := "~h" + hex.EncodeToString(sum[:8])
	cut := limit - len(suffix)
	if cut < 0 {
		cut = 0
	}
	// Back off to a rune boundary, then out of a %XX escape.
	for cut > 0 && !utf8.RuneStart(stem[cut]) {
		cut--
	}
	if j := strings.LastIndexByte(stem[:cut], '%'); j >= 0 && cut-j < 3 {
		cut = j
	}
	return stem[:cut] + suffix
}

// dupName is the name of the n-th extra sample sharing stem (n ≥ 1).
func dupName(stem string, n int, ext string) string {
	return stem + "~" + strconv.Itoa(n) + ext
}

// pathHash names a data file in the ids of a table without an id column
// (whose rows are "<hash>-<physical row>"): the first 8 hex digits of the
// SHA-256 of its path, so an id is stable across versions that share the file.
func pathHash(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:4])
}

// reserved reports whether a name is one deltafs gives its own entries in
// a shard directory (the sample and extent lists) or to nulls. A sample or class whose
// escaped name would be one gets its first byte escaped instead
// (escapeFirst), which UnescapeName still reverses.
func reserved(name string) bool {
	switch name {
	case ListName, extents.ListName, NullName:
		return true
	}
	return false
}

// escapeFirst escapes the first byte of an escaped name as %XX.
func escapeFirst(name string) string {
	if name == "" {
		return name
	}
	return "%" + string(hexUpper[name[0]>>4]) + string(hexUpper[name[0]&15]) + name[1:]
}
