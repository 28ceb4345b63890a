package gds

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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

// TestChecksum: the checksum is zlib's CRC-32 (IEEE); its text form is
// fixed-width whatever the value, so a manifest's size does not depend on
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
	err := verify(ext, 0xcbf43927)
	var ce *ChecksumError
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &ce) || ce.Got != NewChecksum(0xcbf43927) || !strings.Contains(err.Error(), "cbf43927") || !strings.Contains(err.Error(), "cbf43926") {
		t.Fatalf("mismatch: %v", err)
	}
	if verify(ext, 0xcbf43926) != nil || verify(Extent{Path: "p", Length: 9}, 42) != nil {
		t.Fatal("a matching or unknown checksum failed")
	}
}

func TestManifestRoundTrip(t *testing.T) {
	entries := []ManifestEntry{
		{Sample: "7/000123.png", Extent: Extent{Path: "/c/3f.blk", Offset: 1052672, Length: 2791, Sum: NewChecksum(0xdeadbeef)}},
		{Sample: "000124.json", Extent: Extent{Path: "/c/3f.blk", Offset: 1056768, Length: 0, Sum: ChecksumOf(nil)}},
		{Sample: "tab\there/new\nline\\x.bin", Extent: Extent{Path: "/c/with space\r.blk", Offset: 0, Length: 4096, Sum: NewChecksum(7)}},
		{Sample: "#not-a-comment", Extent: Extent{Path: "rel/a.blk", Offset: 8192, Length: 1}},
	}
	var buf bytes.Buffer
	if err := WriteManifest(&buf, entries); err != nil {
		t.Fatal(err)
	}
	header := "sample\tpath\toffset\tlength\tcrc32\n"
	want := header +
		"7/000123.png\t/c/3f.blk\t1052672\t2791\tdeadbeef\n" +
		"000124.json\t/c/3f.blk\t1056768\t0\t00000000\n" +
		`tab\there/new\nline\\x.bin` + "\t/c/with space\\r.blk\t0\t4096\t00000007\n" +
		"#not-a-comment\trel/a.blk\t8192\t1\t--------\n"
	if buf.String() != want {
		t.Fatalf("written:\n%s\nwant:\n%s", buf.String(), want)
	}
	got, err := ParseManifest(strings.NewReader(buf.String()))
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	// CRLF, blank lines, no final newline.
	crlf := strings.ReplaceAll(want, "\n", "\r\n")
	crlf = strings.Replace(crlf, "\r\n", "\r\n\r\n", 2)
	crlf = strings.TrimSuffix(crlf, "\r\n")
	if got, err := ParseManifest(strings.NewReader(crlf)); err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("CRLF variant: %+v, %v", got, err)
	}
	if got, err := ParseManifest(strings.NewReader(header)); err != nil || len(got) != 0 {
		t.Fatalf("no entries: %v %v", got, err)
	}

	// ReadManifestFile resolves relative cache paths against its directory.
	dir := t.TempDir()
	mp := filepath.Join(dir, ManifestName)
	if err := os.WriteFile(mp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := ReadManifestFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	if read[3].Path != filepath.Join(dir, "rel/a.blk") || read[0].Path != "/c/3f.blk" {
		t.Errorf("paths %q %q", read[3].Path, read[0].Path)
	}
	if ex := Extents(read); len(ex) != 4 || ex[2] != read[2].Extent {
		t.Errorf("Extents: %v", ex)
	}
}

func TestManifestErrors(t *testing.T) {
	h := "sample\tpath\toffset\tlength\tcrc32\n"
	for _, c := range []struct{ in, msg string }{
		{h + "a\tp\t1\t2\n", "line 2: want 5"},
		{h + "a\tp\t1\t2\t00000000\nb\tp\tx\t2\t00000000\n", "line 3: sample \"b\": offset"},
		{h + "a\tp\t1\t-2\t00000000\n", "line 2: sample \"a\": extent p: negative length"},
		{h + "\tp\t1\t2\t00000000\n", "line 2: empty sample path"},
		{h + "a\t\t1\t2\t00000000\n", "empty path"},
		{h + `a\z` + "\tp\t1\t2\t00000000\n", `line 2: sample: unknown escape \z`},
		{h + "a\tp\t0\t1\tBADF00D0\n", `line 2: sample "a": crc32 "BADF00D0"`},
		{h + "x\tp\t0\t1\t00000000\n" + h, `line 3: sample "sample": offset`},
		// No header: not a manifest, whatever follows.
		{"a\tp\t1\t2\t00000000\n", "not an extent manifest"},
		{"", "empty manifest"},
		{"\n" + h, "not an extent manifest"},
	} {
		_, err := ParseManifest(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want %q", c.in, err, c.msg)
		}
	}
	// The format before checksums is refused by name.
	old := "sample\tpath\toffset\tlength\n7/1.png\t/c/a.blk\t4096\t10\n"
	if _, err := ParseManifest(strings.NewReader(old)); !errors.Is(err, ErrOldManifest) || !strings.Contains(err.Error(), "remount") {
		t.Errorf("old format: %v", err)
	}
	var buf bytes.Buffer
	err := WriteManifest(&buf, []ManifestEntry{{Sample: "ok", Extent: Extent{Path: "p", Length: 1}}, {Sample: "", Extent: Extent{Path: "p"}}})
	if err == nil || buf.Len() != 0 {
		t.Errorf("invalid entry: %v, wrote %q", err, buf.String())
	}
}

func TestPackOffsets(t *testing.T) {
	exts := []Extent{{Length: 10}, {Length: 4096}, {Length: 0}, {Length: 1}}
	offs, total := PackOffsets(exts, Alignment)
	if !reflect.DeepEqual(offs, []int64{0, 4096, 8192, 8192}) || total != 8193 {
		t.Errorf("aligned: %v %d", offs, total)
	}
	offs, total = PackOffsets(exts, 0)
	if !reflect.DeepEqual(offs, []int64{0, 10, 4106, 4106}) || total != 4107 {
		t.Errorf("packed: %v %d", offs, total)
	}
}

// FuzzParseManifest: whatever parses must write back and parse to the
// same entries.
func FuzzParseManifest(f *testing.F) {
	f.Add("sample\tpath\toffset\tlength\tcrc32\n7/1.png\t/c/a.blk\t4096\t10\t0badf00d\n")
	f.Add("sample\tpath\toffset\tlength\tcrc32\r\na\\tb\t/c\\\\d\t0\t0\t--------\r\n\nx\ty\t1\t2\t00000000")
	f.Add("sample\tpath\toffset\tlength\n7/1.png\t/c/a.blk\t4096\t10\n")
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := ParseManifest(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteManifest(&buf, entries); err != nil {
			t.Fatalf("parsed entries do not write: %v", err)
		}
		again, err := ParseManifest(&buf)
		if err != nil || len(again) != len(entries) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range again {
			if again[i] != entries[i] {
				t.Fatalf("entry %d: %+v != %+v", i, again[i], entries[i])
			}
		}
	})
}
