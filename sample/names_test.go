package sample

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"7", "7"},
		{"", "%"},
		{"a/b", "a%2Fb"},
		{".", "%2E"},
		{"..", "%2E."},
		{".hidden", "%2Ehidden"},
		{"x.y", "x.y"},
		{"100%", "100%25"},
		{"7~1", "7%7E1"},
		{"nul\x00", "nul%00"},
		{"tab\tnl\n", "tab%09nl%0A"},
		{"héllo wörld", "héllo wörld"},
		{"bad\xffutf8", "bad%FFutf8"},
	} {
		got := EscapeName(tc.in)
		if got != tc.want {
			t.Errorf("EscapeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		back, ok := UnescapeName(got)
		if !ok || back != tc.in {
			t.Errorf("UnescapeName(%q) = %q, %v; want %q", got, back, ok, tc.in)
		}
		if strings.ContainsAny(got, "/\x00~") || got == "." || got == ".." || strings.HasPrefix(got, ".") {
			t.Errorf("EscapeName(%q) = %q is not a safe name", tc.in, got)
		}
	}
	if _, ok := UnescapeName("a%4"); ok {
		t.Error("UnescapeName accepted a truncated escape")
	}
}

func TestFitName(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	a := fitName(EscapeName(long), ".png")
	b := fitName(EscapeName(long+"x"), ".png")
	if a == b {
		t.Fatal("two long ids fit to the same name")
	}
	for _, n := range []string{a, b} {
		full := dupName(n, 123456, ".png")
		if len(full) > MaxNameBytes || !utf8.ValidString(n) {
			t.Errorf("fitted name %d bytes (valid UTF-8 %v)", len(full), utf8.ValidString(n))
		}
	}
	// A cut never splits an escape.
	esc := fitName(EscapeName(strings.Repeat("/", 200)), ".json")
	if i := strings.LastIndexByte(esc, '~'); i < 0 || strings.Count(esc[:i], "%")*3 != len(esc[:i]) {
		t.Errorf("cut inside an escape: %q", esc)
	}
	if short := fitName("7", ".png"); short != "7" {
		t.Errorf("short name changed: %q", short)
	}
}

// FuzzEscapeName: every value escapes to a safe file-name component that
// unescapes to it, also with its first byte escaped (reserved names), and
// no value but a null is named NullName.
func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"", "7", "__null__", "_samples.tsv", "%", "~", "a/b", ".", "..", "\x00", "\xff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeName(s)
		if e == "" || e == "." || e == ".." || e == NullName || strings.ContainsAny(e, "/\x00~") || e[0] == '.' {
			t.Fatalf("EscapeName(%q) = %q is not a safe, unreserved name", s, e)
		}
		names := []string{e}
		if e[0] != '%' { // reserved names start with '_'
			names = append(names, escapeFirst(e))
		}
		for _, n := range names {
			if back, ok := UnescapeName(n); !ok || back != s {
				t.Fatalf("UnescapeName(%q) = %q, %v; want %q", n, back, ok, s)
			}
		}
	})
}
