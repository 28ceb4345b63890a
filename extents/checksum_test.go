package extents

import (
	"errors"
	"strings"
	"testing"
)

// TestChecksum: the checksum is zlib's CRC-32 (IEEE); its text form is
// fixed-width whatever the value, so an extent list's size does not depend on
// the checksums in it.
func TestChecksum(t *testing.T) {
	// zlib.crc32(b"123456789") == 0xcbf43926, the CRC-32 check value.
	if c := ChecksumOf([]byte("123456789")); c.CRC32() != 0xcbf43926 || c.String() != "cbf43926" || !c.Known() {
		t.Fatalf("CRC-32 of the check string: %s", c)
	}
	for _, c := range []Checksum{{}, NewChecksum(0), NewChecksum(1), NewChecksum(0xffffffff)} {
		s := c.String()
		if len(s) != 8 {
			t.Fatalf("%+v: text %q is not 8 characters", c, s)
		}
		got, err := parseChecksum(s)
		if err != nil || got != c {
			t.Fatalf("%q: %+v %v", s, got, err)
		}
	}
	if (Checksum{}).Known() || (Checksum{}).String() != "--------" {
		t.Fatal("the zero Checksum is not unknown")
	}
	ext := Extent{Path: "p", Length: 9, Sum: ChecksumOf([]byte("123456789"))}
	err := ext.Verify(0xcbf43927)
	var ce *ChecksumError
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &ce) || ce.Got != NewChecksum(0xcbf43927) || !strings.Contains(err.Error(), "cbf43927") || !strings.Contains(err.Error(), "cbf43926") {
		t.Fatalf("mismatch: %v", err)
	}
	if ext.Verify(0xcbf43926) != nil || (Extent{Path: "p", Length: 9}).Verify(42) != nil {
		t.Fatal("a matching or unknown checksum failed")
	}
}
