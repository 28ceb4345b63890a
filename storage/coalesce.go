package storage

import (
	"context"
	"fmt"
	"io"
	"sort"

	"golang.org/x/sync/errgroup"
)

// Span is one read that serves several ranges of an object: bytes
// [Off, End), and the indexes of the ranges it holds.
type Span struct {
	Off, End int64
	Members  []int
}

// Coalesce plans the reads of ranges of one object for a remote store
// (S3, GCS): sorted by offset, a range joins the span of the previous ones
// when the gap between them is at most gap bytes (negative: only touching
// or overlapping ranges join) and the span stays within maxSpan bytes; a
// single range larger than maxSpan is still one span. Empty ranges are in
// no span. A range with a negative offset or length is refused.
func Coalesce(ranges []Range, gap, maxSpan int64) ([]Span, error) {
	order := make([]int, 0, len(ranges))
	for i, r := range ranges {
		if r.Off < 0 || r.Len < 0 {
			return nil, fmt.Errorf("invalid range %d+%d", r.Off, r.Len)
		}
		if r.Len > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return ranges[order[a]].Off < ranges[order[b]].Off })
	gap = max(gap, 0)
	var spans []Span
	for _, i := range order {
		r := ranges[i]
		end := r.Off + r.Len
		if n := len(spans); n > 0 {
			s := &spans[n-1]
			if r.Off <= s.End+gap && max(s.End, end)-s.Off <= maxSpan {
				s.End = max(s.End, end)
				s.Members = append(s.Members, i)
				continue
			}
		}
		spans = append(spans, Span{Off: r.Off, End: end, Members: []int{i}})
	}
	return spans, nil
}

// ReadSpans reads each span with one call of readAt (in parallel) and
// returns the bytes of each range, in the order of ranges (empty ranges
// are empty slices). The slices may share a backing array; their capacity
// is clipped, so appending to one never overwrites another. A span that
// readAt cannot fill fails the call with an error wrapping
// io.ErrUnexpectedEOF that names name (the object, for messages).
func ReadSpans(ctx context.Context, name string, ranges []Range, spans []Span, readAt func(ctx context.Context, p []byte, off int64) (int, error)) ([][]byte, error) {
	out := make([][]byte, len(ranges))
	for i, r := range ranges {
		if r.Len == 0 {
			out[i] = []byte{}
		}
	}
	eg, ectx := errgroup.WithContext(ctx)
	for _, s := range spans {
		eg.Go(func() error {
			buf := make([]byte, s.End-s.Off)
			n, err := readAt(ectx, buf, s.Off)
			if n == len(buf) {
				err = nil
			} else if err == nil || err == io.EOF {
				err = fmt.Errorf("%s: range %d-%d runs past the end of the object: %w", name, s.Off, s.End-1, io.ErrUnexpectedEOF)
			}
			if err != nil {
				return err
			}
			for _, i := range s.Members {
				a := ranges[i].Off - s.Off
				b := a + ranges[i].Len
				out[i] = buf[a:b:b]
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
