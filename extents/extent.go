package extents

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Alignment is the file-offset alignment the disk cache gives sample
// payloads (cache.Cache.Where), and the alignment O_DIRECT and GPUDirect
// Storage need to move bytes without a bounce buffer.
const Alignment = 4096

// XattrName is the extended attribute on a sample file (mount option
// --xattrs) whose value is the sample's Extent in its text form.
const XattrName = "user.deltafs.extent"

// Extent is where a sample's bytes lie, contiguous, in a local file: Length
// bytes starting at Offset in the file at Path, whose CRC-32 is Sum.
// deltafs's disk cache keeps each cached sample as one extent at a 4
// KiB-aligned offset, so a loader can read it with cuFile straight into GPU
// memory instead of through FUSE.
//
// The text form (MarshalText, the value of XattrName, and the last four
// columns of an extent list line) is
//
//	PATH<TAB>OFFSET<TAB>LENGTH<TAB>CRC32
//
// with PATH escaped as described in the package documentation, OFFSET and
// LENGTH in decimal and CRC32 as Checksum's text form (8 hex digits, or
// "--------" when unknown).
type Extent struct {
	Path   string   // local file holding the bytes (absolute in extents deltafs produces)
	Offset int64    // byte offset of the first byte in Path
	Length int64    // number of bytes
	Sum    Checksum // CRC-32 of the Length bytes; the zero value is unknown (not verified)
}

// Aligned reports whether the extent starts at a multiple of Alignment.
func (e Extent) Aligned() bool { return e.Offset%Alignment == 0 }

// End returns the offset just past the extent's last byte.
func (e Extent) End() int64 { return e.Offset + e.Length }

// Validate checks that the extent names a file and a non-negative range that
// does not overflow int64.
func (e Extent) Validate() error {
	switch {
	case e.Path == "":
		return errors.New("extent: empty path")
	case e.Offset < 0:
		return fmt.Errorf("extent %s: negative offset %d", e.Path, e.Offset)
	case e.Length < 0:
		return fmt.Errorf("extent %s: negative length %d", e.Path, e.Length)
	case e.Offset > math.MaxInt64-e.Length:
		return fmt.Errorf("extent %s: offset %d + length %d overflows", e.Path, e.Offset, e.Length)
	}
	return nil
}

// String returns the extent as "PATH@OFFSET+LENGTH", for messages.
func (e Extent) String() string { return fmt.Sprintf("%s@%d+%d", e.Path, e.Offset, e.Length) }

// MarshalText returns the extent's text form,
// PATH<TAB>OFFSET<TAB>LENGTH<TAB>CRC32.
func (e Extent) MarshalText() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return []byte(escapeField(e.Path) + "\t" + strconv.FormatInt(e.Offset, 10) + "\t" + strconv.FormatInt(e.Length, 10) + "\t" + e.Sum.String()), nil
}

// UnmarshalText parses the text form written by MarshalText. The
// three-field form of deltafs versions before checksums is refused.
func (e *Extent) UnmarshalText(text []byte) error {
	fields := strings.Split(string(text), "\t")
	if len(fields) == 3 {
		return errors.New("extent: 3 fields, no crc32: written by a deltafs older than extent checksums (remount with this version)")
	}
	if len(fields) != 4 {
		return fmt.Errorf("extent: want 4 tab-separated fields (path, offset, length, crc32), got %d", len(fields))
	}
	x, err := parseExtentFields(fields[0], fields[1], fields[2], fields[3])
	if err != nil {
		return err
	}
	*e = x
	return nil
}

func parseExtentFields(path, off, n, sum string) (Extent, error) {
	p, err := unescapeField(path)
	if err != nil {
		return Extent{}, fmt.Errorf("path: %w", err)
	}
	o, err := strconv.ParseInt(off, 10, 64)
	if err != nil {
		return Extent{}, fmt.Errorf("offset: %w", err)
	}
	l, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return Extent{}, fmt.Errorf("length: %w", err)
	}
	c, err := parseChecksum(sum)
	if err != nil {
		return Extent{}, err
	}
	e := Extent{Path: p, Offset: o, Length: l, Sum: c}
	return e, e.Validate()
}

// escapeField escapes the four bytes a TSV field cannot hold: backslash,
// tab, newline and carriage return.
func escapeField(s string) string {
	if !strings.ContainsAny(s, "\\\t\n\r") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeField reverses escapeField. Any other backslash sequence is an
// error, so the format stays open to later extensions.
func unescapeField(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return "", errors.New(`trailing backslash`)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", fmt.Errorf(`unknown escape \%c`, s[i])
		}
	}
	return b.String(), nil
}
