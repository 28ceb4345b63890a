package main

import (
	"encoding"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/table"
)

// fileErrorLine formats an error about one data file as the one line
// `TABLE version N: FILE: cause`. The layers below each name the version
// and file as they wrap (the sample layer's FileError around the scan
// layer's, ...), which printed as it is repeats them; here they are named
// once, from the innermost wrapper, before the cause. An error that is not
// about a data file gets the table's location (table.WithLocation), and one from
// the log side (*snapshot.Error) already names table, version and file.
func fileErrorLine(location string, err error) error {
	var se *snapshot.Error
	if errors.As(err, &se) {
		return table.WithLocation(location, se)
	}
	version, path, row := int64(-1), "", int64(-1)
	var cause error
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch fe := e.(type) {
		case *sample.FileError:
			version, path, cause = fe.Version, fe.Path, fe.Err
		case *sample.SampleError:
			version, path, row, cause = fe.Version, fe.Path, fe.Row, fe.Err
		case *scan.FileError:
			version, path, cause = fe.Version, fe.Path, fe.Err
		}
	}
	if path == "" {
		return table.WithLocation(location, err)
	}
	if row >= 0 {
		return fmt.Errorf("%s version %d: %s: row %d: %w", location, version, path, row, unnamed{path, cause})
	}
	return fmt.Errorf("%s version %d: %s: %w", location, version, path, unnamed{path, cause})
}

// unnamed is a cause printed without the "FILE: " prefixes the storage
// layer put in it: the line names the file once, before it.
type unnamed struct {
	path string
	err  error
}

func (u unnamed) Error() string { return scan.WithoutName(u.err.Error(), u.path) }
func (u unnamed) Unwrap() error { return u.err }

// lineMax bounds what deltafs prints of one error (after "deltafs: ") and
// of each value of a log line: a hostile table can make a cause of any
// length (a type nested thousands of levels deep spells a 30 KB
// struct<...>), and a line is read by a person or a log pipeline.
const lineMax = 2048

// oneLine is s as one line of at most about lineMax bytes: control
// characters escaped as Go writes them (\n, \t, \x1b, \u2028), bytes that
// are not UTF-8 as \xNN, and past lineMax the middle cut out (bounded).
func oneLine(s string) string { return bounded(escapeControls(s)) }

// bounded is s with its middle replaced by "… (N bytes cut) …" when it is
// longer than lineMax: the start of an error line names table, version and
// file, its end is the innermost cause, so both are kept.
func bounded(s string) string {
	if len(s) <= lineMax {
		return s
	}
	head, tail := lineMax*3/4, len(s)-lineMax/4
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

// boundAttr is the log handler's ReplaceAttr: a value longer than lineMax
// (an error's text, a string, anything printed) is logged bounded. The
// text handler quotes and escapes control characters itself.
func boundAttr(_ []string, a slog.Attr) slog.Attr {
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
	if len(s) <= lineMax {
		return a
	}
	return slog.String(a.Key, bounded(s))
}
