package pqcheck

import (
	"fmt"
	"io"
	"sort"
)

// Staged is an io.ReaderAt over byte ranges of a file held in memory —
// checked bytes handed to parquet-go, so that what it decodes is what was
// checked and nothing is read twice. A read starting inside a range is
// served from it (a short read at the range's end: parquet-go's buffered
// reader asks for more than a page); any other read goes to Rest, or
// fails when Rest is nil.
type Staged struct {
	ranges []span // sorted by offset
	Rest   io.ReaderAt
}

type span struct {
	off int64
	b   []byte
}

// Add makes [off, off+len(b)) read from b.
func (s *Staged) Add(off int64, b []byte) {
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].off > off })
	s.ranges = append(s.ranges, span{})
	copy(s.ranges[i+1:], s.ranges[i:])
	s.ranges[i] = span{off, b}
}

func (s *Staged) ReadAt(p []byte, off int64) (int, error) {
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].off > off }) - 1
	if i >= 0 {
		r := s.ranges[i]
		if off < r.off+int64(len(r.b)) {
			end := off + int64(len(p))
			if end <= r.off+int64(len(r.b)) || s.Rest == nil {
				return copy(p, r.b[off-r.off:]), nil
			}
		}
	}
	if s.Rest == nil {
		return 0, fmt.Errorf("read of %d bytes at %d outside the bytes checked", len(p), off)
	}
	return s.Rest.ReadAt(p, off)
}
