package storage

import (
	"context"
	"fmt"
	"io"
	"sort"

	"golang.org/x/sync/errgroup"
)

// Coalescing is how an object store's RangeReader merges neighbouring
// ranges of one object into fewer requests (s3store, azstore).
type Coalescing struct {
	// Gap: two ranges are read with one request when the gap between
	// them is at most this many bytes (negative: only touching or
	// overlapping ranges are merged). The gap's bytes are fetched and
	// dropped, which costs less than another round trip.
	Gap int64
	// Max caps the size of one merged request; a single range larger than
	// this is still read with one request.
	Max int64
}

// ReadCoalesced serves a RangeReader's ReadRanges: it validates ranges
// (negative offsets or lengths are refused, empty ones answered at once),
// sorts them by offset, merges neighbours as c says, calls before with the
// number of merged requests (so a store can pin the object's identity
// first when there are several), then reads the merged ranges in parallel
// with read, which must fill its buffer or fail. A merged range that runs
// past the end of the object fails the call with an error wrapping
// io.ErrUnexpectedEOF. It returns the bytes of each range in the order
// given (the slices may share a backing array; their capacity is clipped,
// so appending to one never overwrites another) and the number of ranges
// served by a request issued for another range.
func ReadCoalesced(ctx context.Context, loc, key string, ranges []Range, c Coalescing,
	before func(requests int) error,
	read func(ctx context.Context, off int64, buf []byte) (int, error)) ([][]byte, int, error) {
	out := make([][]byte, len(ranges))
	order := make([]int, 0, len(ranges))
	for i, r := range ranges {
		if r.Off < 0 || r.Len < 0 {
			return nil, 0, fmt.Errorf("%s/%s: invalid range %d+%d", loc, key, r.Off, r.Len)
		}
		if r.Len == 0 {
			out[i] = []byte{}
			continue
		}
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return ranges[order[a]].Off < ranges[order[b]].Off })

	type group struct {
		off, end int64 // [off, end)
		members  []int
	}
	var groups []*group
	gap := max(c.Gap, 0)
	for _, i := range order {
		r := ranges[i]
		end := r.Off + r.Len
		if len(groups) > 0 {
			g := groups[len(groups)-1]
			if r.Off <= g.end+gap && max(g.end, end)-g.off <= c.Max {
				g.end = max(g.end, end)
				g.members = append(g.members, i)
				continue
			}
		}
		groups = append(groups, &group{off: r.Off, end: end, members: []int{i}})
	}
	if len(groups) == 0 {
		return out, 0, nil
	}
	if before != nil {
		if err := before(len(groups)); err != nil {
			return nil, 0, err
		}
	}
	coalesced := 0
	eg, ectx := errgroup.WithContext(ctx)
	for _, g := range groups {
		coalesced += len(g.members) - 1
		eg.Go(func() error {
			buf := make([]byte, g.end-g.off)
			n, err := read(ectx, g.off, buf)
			if n == len(buf) {
				err = nil
			} else if err == nil || err == io.EOF {
				err = fmt.Errorf("%s/%s: range %d-%d runs past the end of the object: %w", loc, key, g.off, g.end-1, io.ErrUnexpectedEOF)
			}
			if err != nil {
				return err
			}
			for _, i := range g.members {
				a := ranges[i].Off - g.off
				b := a + ranges[i].Len
				out[i] = buf[a:b:b]
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, 0, err
	}
	return out, coalesced, nil
}
