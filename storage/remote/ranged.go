package remote

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
)

// RangedGet checks the answer to one attempt of a ranged GET of bytes
// [Off, Off+len(Dst)) and reads its body into Dst: the checks every HTTP
// object store needs, since a server may ignore Range (200 with the whole
// object), answer another range, cut the body short or, with a pin,
// answer for another version of the object. S3 and Azure share it; GCS's
// SDK makes these checks itself.
type RangedGet struct {
	Off int64
	Dst []byte
	// Pin, when set, is the identity the answer must match (the GET sent
	// If-Match with its ETag): the same ETag and size, and Dst filled.
	// Without, the object may end before Dst is full.
	Pin *Pin
	// Noun names an object in messages ("object", "blob").
	Noun string
	// Bytes counts the body bytes received, skipped ones included.
	Bytes *atomic.Int64
	// Changed is the error for an answer of another version, why in words
	// (an ErrChanged of the store).
	Changed func(why string) error
	// Canceled reports an error caused by the request's context: not
	// worth another attempt.
	Canceled func(error) bool
}

// RangeAnswer is what RangedGet reads of a response.
type RangeAnswer struct {
	ETag          string // normalised (NormETag); "" when absent
	ContentRange  string // "" when the server sent the whole object
	ContentLength *int64
	Body          io.Reader
}

// Refused is the error for a refused range (HTTP 416) of cause: with a
// pin the object changed (it had Pin.Size bytes), without it the error
// wraps ErrInvalidRange (the range starts at or past the end).
func (g RangedGet) Refused(cause error) error {
	if g.Pin != nil {
		return g.Changed(fmt.Sprintf("range at %d of a %d-byte %s refused", g.Off, g.Pin.Size, g.Noun))
	}
	return fmt.Errorf("%w: %w", ErrInvalidRange, cause)
}

// PreconditionFailed is the error for a failed If-Match (HTTP 412).
func (g RangedGet) PreconditionFailed() error {
	return g.Changed("If-Match on the pinned ETag failed")
}

// Read checks a and reads its body into Dst. It returns the bytes read,
// the object's size, and whether a failure is worth another attempt (a
// malformed or cut answer is; another version of the object is not).
func (g RangedGet) Read(a RangeAnswer) (n int, total int64, err error, retryable bool) {
	if p := g.Pin; p != nil && p.ETag != "" && a.ETag != "" && a.ETag != p.ETag {
		// A server that ignores If-Match.
		return 0, 0, g.Changed(fmt.Sprintf("pinned ETag %q, got %q", p.ETag, a.ETag)), false
	}
	asked := fmt.Sprintf("bytes=%d-%d", g.Off, g.Off+int64(len(g.Dst))-1)
	var want int64
	if cr := a.ContentRange; cr != "" {
		start, end, size, ok := parseContentRange(cr)
		if !ok || start != g.Off || end < start {
			return 0, 0, fmt.Errorf("unexpected Content-Range %q for %s", cr, asked), true
		}
		total, want = size, end-start+1
		if exp := min(int64(len(g.Dst)), total-g.Off); want != exp {
			return 0, total, fmt.Errorf("Content-Range %q for %s: expected %d bytes", cr, asked, exp), true
		}
		if cl := a.ContentLength; cl != nil && *cl != want {
			return 0, total, fmt.Errorf("Content-Length %d disagrees with Content-Range %q", *cl, cr), true
		}
	} else {
		// 200 with the whole object: the server ignored Range.
		if a.ContentLength == nil || *a.ContentLength < 0 {
			return 0, 0, fmt.Errorf("full response without Content-Length for %s", asked), true
		}
		total = *a.ContentLength
		if g.Off >= total {
			return 0, total, fmt.Errorf("%w: offset %d, %s of %d bytes", ErrInvalidRange, g.Off, g.Noun, total), false
		}
		skipped, err := io.CopyN(io.Discard, a.Body, g.Off)
		g.Bytes.Add(skipped)
		if err != nil {
			return 0, total, &BodyError{Want: g.Off, Got: skipped, Err: err}, !g.Canceled(err)
		}
		want = min(int64(len(g.Dst)), total-g.Off)
	}
	if p := g.Pin; p != nil && total != p.Size {
		return 0, total, g.Changed(fmt.Sprintf("pinned %d bytes, now %d", p.Size, total)), false
	}
	if g.Pin != nil && want != int64(len(g.Dst)) {
		return 0, total, g.Changed("short range"), false
	}
	n, err = io.ReadFull(a.Body, g.Dst[:want])
	g.Bytes.Add(int64(n))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, total, &BodyError{Want: want, Got: int64(n), Err: err}, !g.Canceled(err)
	}
	return n, total, nil, false
}

// parseContentRange parses "bytes start-end/total".
func parseContentRange(s string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	total, err3 = strconv.ParseInt(tot, 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || start < 0 || end >= total {
		return 0, 0, 0, false
	}
	return start, end, total, true
}
