package extents

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestListRoundTrip(t *testing.T) {
	entries := []Entry{
		{Sample: "7/000123.png", Extent: Extent{Path: "/c/3f.blk", Offset: 1052672, Length: 2791, Sum: NewChecksum(0xdeadbeef)}},
		{Sample: "000124.json", Extent: Extent{Path: "/c/3f.blk", Offset: 1056768, Length: 0, Sum: ChecksumOf(nil)}},
		{Sample: "tab\there/new\nline\\x.bin", Extent: Extent{Path: "/c/with space\r.blk", Offset: 0, Length: 4096, Sum: NewChecksum(7)}},
		{Sample: "#not-a-comment", Extent: Extent{Path: "rel/a.blk", Offset: 8192, Length: 1}},
	}
	var buf bytes.Buffer
	if err := WriteList(&buf, entries); err != nil {
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
	got, err := ParseList(strings.NewReader(buf.String()))
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	// CRLF, blank lines, no final newline.
	crlf := strings.ReplaceAll(want, "\n", "\r\n")
	crlf = strings.Replace(crlf, "\r\n", "\r\n\r\n", 2)
	crlf = strings.TrimSuffix(crlf, "\r\n")
	if got, err := ParseList(strings.NewReader(crlf)); err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("CRLF variant: %+v, %v", got, err)
	}
	if got, err := ParseList(strings.NewReader(header)); err != nil || len(got) != 0 {
		t.Fatalf("no entries: %v %v", got, err)
	}

	// ReadListFile resolves relative cache paths against its directory.
	dir := t.TempDir()
	mp := filepath.Join(dir, ListName)
	if err := os.WriteFile(mp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := ReadListFile(mp)
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

func TestListErrors(t *testing.T) {
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
		// No header: not an extent list, whatever follows.
		{"a\tp\t1\t2\t00000000\n", "not an extent list"},
		{"", "empty extent list"},
		{"\n" + h, "not an extent list"},
	} {
		_, err := ParseList(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want %q", c.in, err, c.msg)
		}
	}
	// The format before checksums is refused by name.
	old := "sample\tpath\toffset\tlength\n7/1.png\t/c/a.blk\t4096\t10\n"
	if _, err := ParseList(strings.NewReader(old)); !errors.Is(err, ErrOldList) || !strings.Contains(err.Error(), "remount") {
		t.Errorf("old format: %v", err)
	}
	var buf bytes.Buffer
	err := WriteList(&buf, []Entry{{Sample: "ok", Extent: Extent{Path: "p", Length: 1}}, {Sample: "", Extent: Extent{Path: "p"}}})
	if err == nil || buf.Len() != 0 {
		t.Errorf("invalid entry: %v, wrote %q", err, buf.String())
	}
}

// FuzzParseList: whatever parses must write back and parse to the
// same entries.
func FuzzParseList(f *testing.F) {
	f.Add("sample\tpath\toffset\tlength\tcrc32\n7/1.png\t/c/a.blk\t4096\t10\t0badf00d\n")
	f.Add("sample\tpath\toffset\tlength\tcrc32\r\na\\tb\t/c\\\\d\t0\t0\t--------\r\n\nx\ty\t1\t2\t00000000")
	f.Add("sample\tpath\toffset\tlength\n7/1.png\t/c/a.blk\t4096\t10\n")
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := ParseList(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteList(&buf, entries); err != nil {
			t.Fatalf("parsed entries do not write: %v", err)
		}
		again, err := ParseList(&buf)
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
