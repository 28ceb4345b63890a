package extents

import (
	"bytes"
	"strings"
	"testing"
)

func TestExtentText(t *testing.T) {
	cases := []Extent{
		{Path: "/var/cache/deltafs/blk/00/3f.blk", Offset: 1052672, Length: 2791, Sum: NewChecksum(0x0badf00d)},
		{Path: "/weird\tname\nwith\\escapes\r", Offset: 0, Length: 0, Sum: ChecksumOf(nil)},
		{Path: "relative/ünïcode path.blk", Offset: 4096, Length: 1 << 40},
	}
	for _, e := range cases {
		b, err := e.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\t")); n != 3 || bytes.ContainsAny(b, "\n\r") {
			t.Fatalf("%q: %d tabs or a line break", b, n)
		}
		var got Extent
		if err := got.UnmarshalText(b); err != nil || got != e {
			t.Fatalf("%q: got %+v, %v", b, got, err)
		}
	}
	if b, _ := cases[0].MarshalText(); string(b) != "/var/cache/deltafs/blk/00/3f.blk\t1052672\t2791\t0badf00d" {
		t.Errorf("text form %q", b)
	}
	if b, _ := cases[2].MarshalText(); !strings.HasSuffix(string(b), "\t--------") {
		t.Errorf("unknown checksum's text form %q", b)
	}
	for _, bad := range []string{"", "p\t1", "p\t1\t2\t3\t4", "p\tx\t2\t00000000", "p\t1\t-2\t00000000", "p\t-1\t2\t00000000",
		"\t0\t1\t00000000", `p\q` + "\t0\t1\t00000000", `p\` + "\t0\t1\t00000000", "p\t9223372036854775807\t1\t00000000",
		"p\t0\t1\t0000000", "p\t0\t1\t000000000", "p\t0\t1\tABCDEF01", "p\t0\t1\t-------", "p\t0\t1\t+0000001", "p\t0\t1\t0x000001", "p\t0\t1\t"} {
		var e Extent
		if err := e.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted as %+v", bad, e)
		}
	}
	// The three-field value of a deltafs older than checksums.
	var e Extent
	if err := e.UnmarshalText([]byte("/c/a.dfc\t4096\t10")); err == nil || !strings.Contains(err.Error(), "no crc32") {
		t.Errorf("old xattr value: %v", err)
	}
	if (Extent{Path: "p", Offset: 8192}).Aligned() != true || (Extent{Path: "p", Offset: 100}).Aligned() {
		t.Error("Aligned")
	}
}
