package remote

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

var errTestChanged = errors.New("changed")

// Every hostile answer to a ranged GET of bytes 4-7 of "0123456789" is
// caught: the right bytes, or an error that says whether another attempt
// may help; another version is never retried and never served.
func TestRangedGetHostileAnswers(t *testing.T) {
	const object = "0123456789"
	n64 := func(n int64) *int64 { return &n }
	pin := &Pin{Size: 10, ETag: "e1"}
	for _, c := range []struct {
		name      string
		pin       *Pin
		answer    RangeAnswer
		want      string // bytes read, when no error
		err       string // substring of the error
		changed   bool
		retryable bool
	}{
		{name: "range", answer: RangeAnswer{ContentRange: "bytes 4-7/10", ContentLength: n64(4), Body: strings.NewReader("4567")}, want: "4567"},
		{name: "range at the end", answer: RangeAnswer{ContentRange: "bytes 4-9/10", Body: strings.NewReader("456789")}, want: "456789"},
		{name: "range ignored", answer: RangeAnswer{ContentLength: n64(10), Body: strings.NewReader(object)}, want: "4567"},
		{name: "pinned", pin: pin, answer: RangeAnswer{ETag: "e1", ContentRange: "bytes 4-7/10", Body: strings.NewReader("4567")}, want: "4567"},
		{name: "other range", answer: RangeAnswer{ContentRange: "bytes 0-3/10", Body: strings.NewReader("0123")}, err: "unexpected Content-Range", retryable: true},
		{name: "garbled range", answer: RangeAnswer{ContentRange: "bytes 4-x/10", Body: strings.NewReader("4567")}, err: "unexpected Content-Range", retryable: true},
		{name: "range past the total", answer: RangeAnswer{ContentRange: "bytes 4-12/10", Body: strings.NewReader("4567")}, err: "unexpected Content-Range", retryable: true},
		{name: "shorter range", answer: RangeAnswer{ContentRange: "bytes 4-5/10", Body: strings.NewReader("45")}, err: "expected 4 bytes", retryable: true},
		{name: "length disagrees", answer: RangeAnswer{ContentRange: "bytes 4-7/10", ContentLength: n64(3), Body: strings.NewReader("456")}, err: "disagrees", retryable: true},
		{name: "body cut", answer: RangeAnswer{ContentRange: "bytes 4-7/10", Body: strings.NewReader("45")}, err: "", retryable: true},
		{name: "body broken", answer: RangeAnswer{ContentRange: "bytes 4-7/10", Body: iotest.ErrReader(io.ErrClosedPipe)}, retryable: true},
		{name: "whole without length", answer: RangeAnswer{Body: strings.NewReader(object)}, err: "without Content-Length", retryable: true},
		{name: "whole cut before the range", answer: RangeAnswer{ContentLength: n64(10), Body: strings.NewReader("01")}, retryable: true},
		{name: "whole, offset past the end", answer: RangeAnswer{ContentLength: n64(3), Body: strings.NewReader("012")}, err: ErrInvalidRange.Error()},
		{name: "other ETag", pin: pin, answer: RangeAnswer{ETag: "e2", ContentRange: "bytes 4-7/10", Body: strings.NewReader("4567")}, changed: true, err: `got "e2"`},
		{name: "other size", pin: pin, answer: RangeAnswer{ETag: "e1", ContentRange: "bytes 4-7/11", Body: strings.NewReader("4567")}, changed: true, err: "now 11"},
		{name: "pinned, object ended", pin: &Pin{Size: 6, ETag: "e1"}, answer: RangeAnswer{ContentRange: "bytes 4-5/6", Body: strings.NewReader("45")}, changed: true, err: "short range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fetched atomic.Int64
			dst := make([]byte, 4)
			if c.name == "range at the end" {
				dst = make([]byte, 6)
			}
			g := RangedGet{
				Off: 4, Dst: dst, Pin: c.pin, Noun: "object", Bytes: &fetched,
				Changed:  func(why string) error { return fmt.Errorf("%w: %s", errTestChanged, why) },
				Canceled: func(error) bool { return false },
			}
			n, _, err, retryable := g.Read(c.answer)
			if c.want != "" {
				if err != nil || string(dst[:n]) != c.want {
					t.Fatalf("read %q, %v; want %q", dst[:n], err, c.want)
				}
				if fetched.Load() < int64(n) {
					t.Errorf("counted %d bytes fetched for %d read", fetched.Load(), n)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q without error", dst[:n])
			}
			if n != 0 {
				t.Errorf("%d bytes returned with the error %v", n, err)
			}
			if !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %q does not say %q", err, c.err)
			}
			if errors.Is(err, errTestChanged) != c.changed {
				t.Errorf("error %q: changed = %v, want %v", err, !c.changed, c.changed)
			}
			if retryable != c.retryable {
				t.Errorf("error %q: retryable = %v, want %v", err, retryable, c.retryable)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of more than one line: %q", err)
			}
		})
	}
}

// A refused range is another version of a pinned object, or a read past
// the end of an unpinned one; a failed If-Match is always a change.
func TestRangedGetRefused(t *testing.T) {
	g := RangedGet{Off: 12, Noun: "blob", Changed: func(why string) error { return fmt.Errorf("%w: %s", errTestChanged, why) }}
	if err := g.Refused(errors.New("416")); !errors.Is(err, ErrInvalidRange) || errors.Is(err, errTestChanged) {
		t.Errorf("unpinned 416: %v", err)
	}
	g.Pin = &Pin{Size: 20}
	if err := g.Refused(errors.New("416")); !errors.Is(err, errTestChanged) || !strings.Contains(err.Error(), "range at 12 of a 20-byte blob refused") {
		t.Errorf("pinned 416: %v", err)
	}
	if err := g.PreconditionFailed(); !errors.Is(err, errTestChanged) {
		t.Errorf("412: %v", err)
	}
}
