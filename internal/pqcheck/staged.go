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

// StageChunk reads column chunk col of row group rg whole through r (one
// read, of at most MaxChunkBytes), checks its pages, and returns them
// staged for parquet-go (FileColumnChunk.PagesFrom).
func (f *File) StageChunk(r io.ReaderAt, rg, col int) (*Staged, error) {
	off, n := f.ChunkRange(rg, col)
	if n > MaxChunkBytes {
		return nil, fmt.Errorf("column %s: a chunk of %d bytes, over the limit of %d MiB", f.Column(col), n, MaxChunkBytes>>20)
	}
	b, err := ReadExact(r, off, n)
	if err != nil {
		return nil, err
	}
	if _, err := f.CheckPages(rg, col, off, b, 0); err != nil {
		return nil, err
	}
	s := &Staged{}
	s.Add(off, b)
	return s, nil
}

// StagePage checks page, the bytes at off of column chunk col of row group
// rg that its offset index locates, and returns it staged for parquet-go.
// A dictionary-encoded page needs the chunk's dictionary page to decode:
// then the bytes from the chunk's start to page0, the offset of its first
// data page, are read through r, checked and staged too.
func (f *File) StagePage(r io.ReaderAt, rg, col int, off int64, page []byte, page0 int64) (*Staged, error) {
	pages, err := f.CheckPages(rg, col, off, page, 0)
	if err != nil {
		return nil, err
	}
	s := &Staged{}
	s.Add(off, page)
	if start, _ := f.ChunkRange(rg, col); pages.DictPages && page0 > start {
		d, err := ReadExact(r, start, page0-start)
		if err != nil {
			return nil, err
		}
		if _, err := f.CheckPages(rg, col, start, d, 0); err != nil {
			return nil, err
		}
		s.Add(start, d)
	}
	return s, nil
}
