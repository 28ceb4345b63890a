package extents

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Checksum is the CRC-32 of a sample's bytes, carried by every extent
// deltafs produces (the fourth field of the extent attribute, the crc32
// column of the extent list) so that a reader can tell the bytes it got from
// a cache file are the sample's.
//
// The algorithm is CRC-32 with the IEEE 802.3 polynomial, the one every
// reader has at hand: Go's crc32.ChecksumIEEE, Python's zlib.crc32 and
// binascii.crc32 (the standard library has no xxhash nor CRC-32C). It
// catches every burst error up to 32 bits and any other corruption with
// probability 1-2^-32; it is not a defence against someone who forges
// cache files.
//
// Its text form is fixed-width, 8 lowercase hex digits, so that an
// extent list's size is known before any sample is read (the kernel learns
// the size of _extents.tsv at lookup, before deltafs materialises the
// shard). The zero Checksum is unknown, written "--------": a sample that
// could not be materialised, or an extent built by hand. Readers verify
// known checksums; the shard and sample readers read a sample with an
// unknown checksum through the mount.
type Checksum struct {
	sum   uint32
	known bool
}

// ChecksumOf returns the checksum of b.
func ChecksumOf(b []byte) Checksum { return Checksum{sum: crc32.ChecksumIEEE(b), known: true} }

// NewChecksum returns the known checksum whose CRC-32 is sum.
func NewChecksum(sum uint32) Checksum { return Checksum{sum: sum, known: true} }

// Known reports whether the checksum is known.
func (c Checksum) Known() bool { return c.known }

// CRC32 returns the CRC-32 (IEEE), 0 when unknown.
func (c Checksum) CRC32() uint32 { return c.sum }

// checksumWidth is the width of the text form.
const checksumWidth = 8

// unknownChecksum is the text form of an unknown checksum.
const unknownChecksum = "--------"

// String returns the text form: 8 lowercase hex digits, or "--------".
func (c Checksum) String() string {
	if !c.known {
		return unknownChecksum
	}
	return fmt.Sprintf("%08x", c.sum)
}

// parseChecksum parses the text form, exactly as String writes it.
func parseChecksum(s string) (Checksum, error) {
	if s == unknownChecksum {
		return Checksum{}, nil
	}
	if len(s) != checksumWidth {
		return Checksum{}, fmt.Errorf("crc32 %q: want 8 hex digits or %q", s, unknownChecksum)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Checksum{}, fmt.Errorf("crc32 %q: want 8 lowercase hex digits or %q", s, unknownChecksum)
		}
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return Checksum{}, fmt.Errorf("crc32 %q: %w", s, err)
	}
	return NewChecksum(uint32(v)), nil
}

// ErrChecksum is matched (errors.Is) by a *ChecksumError.
var ErrChecksum = errors.New("checksum mismatch")

// ChecksumError says that the bytes read for an extent are not the
// sample's: the cache file was corrupted, truncated inside its padding or
// replaced since the extent was taken. gds's shard and sample readers
// treat it as a miss; its ReadBatch and ReadExtent return it.
type ChecksumError struct {
	Extent Extent
	Got    Checksum // of the bytes read
}

// Error does not name the extent: the caller says which it is (gds's
// ReadExtent and ReadBatch do).
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch: the bytes read have CRC-32 %s, the extent says %s", e.Got, e.Extent.Sum)
}

// Is makes errors.Is(err, ErrChecksum) true.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }

// Verify checks got, the CRC-32 (IEEE) of the bytes read for e, against
// e's checksum: a mismatch is a *ChecksumError; an unknown checksum passes.
func (e Extent) Verify(got uint32) error {
	if !e.Sum.Known() || got == e.Sum.CRC32() {
		return nil
	}
	return &ChecksumError{Extent: e, Got: NewChecksum(got)}
}
