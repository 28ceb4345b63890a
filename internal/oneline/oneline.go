// Package oneline makes what deltafs prints one line of bounded length:
// an error line (Of) and every value of a log line (ReplaceAttr, for
// slog's handler). A hostile table can make a cause of any length and
// content (a type nested thousands of levels deep spells a 30 KB
// struct<...>; names hold newlines and escape sequences), and a line is
// read by a person or a log pipeline. It is the one place that bounds
// them.
package oneline

import (
	"encoding"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Max bounds what deltafs prints of one error (after "deltafs: ") and of
// each value of a log line: a hostile table can make a cause of any
// length (a type nested thousands of levels deep spells a 30 KB
// struct<...>), and a line is read by a person or a log pipeline.
const Max = 2048

// Of is s as one line of at most about Max bytes: control
// characters escaped as Go writes them (\n, \t, \x1b, \u2028), bytes that
// are not UTF-8 as \xNN, and past Max the middle cut out (Cut).
func Of(s string) string { return Cut(escapeControls(s)) }

// Cut is s with its middle replaced by "… (N bytes cut) …" when it is
// longer than Max: the start of an error line names table, version and
// file, its end is the innermost cause, so both are kept.
func Cut(s string) string {
	if len(s) <= Max {
		return s
	}
	head, tail := Max*3/4, len(s)-Max/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", s[:head], tail-head, s[tail:])
}

// escapeControls escapes what would break a line or a terminal: control
// characters, the Unicode line and paragraph separators and invalid UTF-8.
func escapeControls(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ReplaceAttr is the log handler's ReplaceAttr: a value longer than Max
// (an error's text, a string, anything printed) is logged bounded. The
// text handler quotes and escapes control characters itself.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			s = v.Error()
		case encoding.TextMarshaler:
			b, err := v.MarshalText()
			if err != nil {
				return a
			}
			s = string(b)
		default:
			s = fmt.Sprintf("%+v", v)
		}
	default:
		return a
	}
	if len(s) <= Max {
		return a
	}
	return slog.String(a.Key, Cut(s))
}
