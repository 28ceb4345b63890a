package gds

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestExtentText(t *testing.T) {
	cases := []Extent{
		{Path: "/var/cache/deltafs/blk/00/3f.blk", Offset: 1052672, Length: 2791},
		{Path: "/weird\tname\nwith\\escapes\r", Offset: 0, Length: 0},
		{Path: "relative/ünïcode path.blk", Offset: 4096, Length: 1 << 40},
	}
	for _, e := range cases {
		b, err := e.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\t")); n != 2 || bytes.ContainsAny(b, "\n\r") {
			t.Fatalf("%q: %d tabs or a line break", b, n)
		}
		var got Extent
		if err := got.UnmarshalText(b); err != nil || got != e {
			t.Fatalf("%q: got %+v, %v", b, got, err)
		}
	}
	if b, _ := cases[0].MarshalText(); string(b) != "/var/cache/deltafs/blk/00/3f.blk\t1052672\t2791" {
		t.Errorf("text form %q", b)
	}
	for _, bad := range []string{"", "p\t1", "p\t1\t2\t3", "p\tx\t2", "p\t1\t-2", "p\t-1\t2", "\t0\t1", `p\q` + "\t0\t1", `p\` + "\t0\t1", "p\t9223372036854775807\t1"} {
		var e Extent
		if err := e.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted as %+v", bad, e)
		}
	}
	if (Extent{Path: "p", Offset: 8192}).Aligned() != true || (Extent{Path: "p", Offset: 100}).Aligned() {
		t.Error("Aligned")
	}
}

func TestManifestRoundTrip(t *testing.T) {
	entries := []ManifestEntry{
		{Sample: "7/000123.png", Extent: Extent{Path: "/c/3f.blk", Offset: 1052672, Length: 2791}},
		{Sample: "000124.json", Extent: Extent{Path: "/c/3f.blk", Offset: 1056768, Length: 0}},
		{Sample: "tab\there/new\nline\\x.bin", Extent: Extent{Path: "/c/with space\r.blk", Offset: 0, Length: 4096}},
		{Sample: "#not-a-comment", Extent: Extent{Path: "rel/a.blk", Offset: 8192, Length: 1}},
	}
	var buf bytes.Buffer
	if err := WriteManifest(&buf, entries); err != nil {
		t.Fatal(err)
	}
	want := "sample\tpath\toffset\tlength\n" +
		"7/000123.png\t/c/3f.blk\t1052672\t2791\n" +
		"000124.json\t/c/3f.blk\t1056768\t0\n" +
		`tab\there/new\nline\\x.bin` + "\t/c/with space\\r.blk\t0\t4096\n" +
		"#not-a-comment\trel/a.blk\t8192\t1\n"
	if buf.String() != want {
		t.Fatalf("written:\n%s\nwant:\n%s", buf.String(), want)
	}
	got, err := ParseManifest(strings.NewReader(buf.String()))
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	// No header, CRLF, blank lines, no final newline.
	crlf := strings.ReplaceAll(strings.TrimPrefix(want, "sample\tpath\toffset\tlength\n"), "\n", "\r\n")
	crlf = "\r\n" + strings.TrimSuffix(crlf, "\r\n")
	if got, err := ParseManifest(strings.NewReader(crlf)); err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("CRLF variant: %+v, %v", got, err)
	}
	if got, err := ParseManifest(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
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
	for _, c := range []struct{ in, msg string }{
		{"sample\tpath\toffset\tlength\na\tp\t1\n", "line 2: want 4"},
		{"a\tp\t1\t2\nb\tp\tx\t2\n", "line 2: sample \"b\": offset"},
		{"a\tp\t1\t-2\n", "line 1: sample \"a\": extent p: negative length"},
		{"\tp\t1\t2\n", "line 1: empty sample path"},
		{"a\t\t1\t2\n", "empty path"},
		{`a\z` + "\tp\t1\t2\n", `line 1: sample: unknown escape \z`},
		{"x\tp\t0\t1\nsample\tpath\toffset\tlength\n", "line 2: sample \"sample\": offset"},
	} {
		_, err := ParseManifest(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want %q", c.in, err, c.msg)
		}
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
	f.Add("sample\tpath\toffset\tlength\n7/1.png\t/c/a.blk\t4096\t10\n")
	f.Add("a\\tb\t/c\\\\d\t0\t0\r\n\nx\ty\t1\t2")
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
