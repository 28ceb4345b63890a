package oneline

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// bound is the longest line Of returns: Max and the cut's marker.
const bound = Max + 40

func checkLine(t *testing.T, line string) {
	t.Helper()
	if len(line) > bound || !utf8.ValidString(line) || strings.ContainsAny(line, "\n\r\x00\x1b\u2028") {
		t.Fatalf("%d bytes, not one bounded line: %.300q", len(line), line)
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain: cause", "plain: cause"},
		{"two\nlines\r\tand \x1b[31mred\x00", `two\nlines\r\tand \x1b[31mred\x00`},
		{"bad \xff utf-8 \u2028 sep", `bad \xff utf-8 \u2028 sep`},
		{"ünïcode stays", "ünïcode stays"},
	} {
		if got := Of(tc.in); got != tc.want {
			t.Errorf("Of(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := "start " + strings.Repeat("é", 20000) + " end"
	got := Of(long)
	cut := regexp.MustCompile(` … \((\d+) bytes cut\) … `).FindStringSubmatch(got)
	if len(got) > bound || !strings.HasPrefix(got, "start é") || !strings.HasSuffix(got, "é end") || !utf8.ValidString(got) ||
		cut == nil || fmt.Sprint(len(long)-(len(got)-len(cut[0]))) != cut[1] {
		t.Fatalf("Of of %d bytes: %d bytes, %.80q … %.80q", len(long), len(got), got, got[len(got)-80:])
	}
}

// FuzzOf: whatever the text, Of is one line of valid UTF-8 of
// bounded length, and leaves a short printable line as it is.
func FuzzOf(f *testing.F) {
	f.Add("table version 3: part-0.parquet: cause")
	f.Add("a\nb\x00\xff\u2028" + strings.Repeat("x", 3000))
	f.Fuzz(func(t *testing.T, s string) {
		got := Of(s)
		checkLine(t, got)
		if len(got) > bound {
			t.Fatalf("%d bytes", len(got))
		}
		if escapeControls(s) == s && len(s) <= Max && got != s {
			t.Fatalf("Of(%q) = %q", s, got)
		}
	})
}

// ReplaceAttr leaves short values alone and cuts long ones, whatever
// their kind (an error, a string, a value printed).
func TestReplaceAttr(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
	long := strings.Repeat("struct<a:", 5000)
	log.Warn("msg\n"+long, "err", errors.New("cause:\n"+long), "s", long, "list", []string{long}, "n", 42, "short", "x y")
	line := strings.TrimSuffix(b.String(), "\n")
	if len(line) > 5*bound || strings.Count(line, " bytes cut) … ") != 4 || strings.ContainsAny(line, "\n\r") ||
		!strings.Contains(line, ` n=42 short="x y"`) || !strings.Contains(line, `err="cause:\nstruct<a:`) {
		t.Fatalf("%d bytes: %.400q", len(line), line)
	}
}
