package sample

import (
	"sort"
	"strconv"
)

// idColumn holds the ids of a data file's live rows compactly, as the
// stems of their names (escaped, see EscapeName):
//
//   - integral id columns as int64s (8 bytes a row), formatted on demand;
//     nulls listed apart (sorted ordinals);
//   - other id columns as one byte arena of stems and their end offsets
//     (4 bytes a row plus the stem's bytes);
//   - no id column: nothing but the data file's path hash, the stem being
//     "<hash>-<physical row>".
type idColumn struct {
	kind  idKind
	ints  []int64
	nulls []uint32 // ordinals of null ids (idInts), ascending
	arena []byte   // idStrings: the stems, back to back
	ends  []uint32 // idStrings: end of stem i in arena
	hash  string   // idDerived: the path hash
}

type idKind uint8

const (
	idDerived idKind = iota
	idInts
	idStrings
)

// appendStem appends the stem of live row ord, whose physical row is row.
func (c *idColumn) appendStem(b []byte, ord int, row int64) []byte {
	switch c.kind {
	case idInts:
		if c.isNull(ord) {
			return append(b, NullName...)
		}
		return strconv.AppendInt(b, c.ints[ord], 10)
	case idStrings:
		start := uint32(0)
		if ord > 0 {
			start = c.ends[ord-1]
		}
		return append(b, c.arena[start:c.ends[ord]]...)
	}
	b = append(b, c.hash...)
	b = append(b, '-')
	return strconv.AppendInt(b, row, 10)
}

// stemLen is the length of appendStem's stem.
func (c *idColumn) stemLen(ord int, row int64) int {
	switch c.kind {
	case idInts:
		if c.isNull(ord) {
			return len(NullName)
		}
		return decimalLen(c.ints[ord])
	case idStrings:
		start := uint32(0)
		if ord > 0 {
			start = c.ends[ord-1]
		}
		return int(c.ends[ord] - start)
	}
	return len(c.hash) + 1 + decimalLen(row)
}

// mayReserve reports whether the stem of ord may be a name deltafs
// reserves (it starts with '_'): its visible stem is then worked out in
// full.
func (c *idColumn) mayReserve(ord int) bool {
	switch c.kind {
	case idInts:
		return c.isNull(ord) // NullName starts with '_'
	case idStrings:
		start := uint32(0)
		if ord > 0 {
			start = c.ends[ord-1]
		}
		return c.ends[ord] > start && c.arena[start] == '_'
	}
	return false
}

func (c *idColumn) isNull(ord int) bool {
	if len(c.nulls) == 0 {
		return false
	}
	i := sort.Search(len(c.nulls), func(i int) bool { return c.nulls[i] >= uint32(ord) })
	return i < len(c.nulls) && c.nulls[i] == uint32(ord)
}

// size is the memory the column holds, in bytes.
func (c *idColumn) size() int64 {
	return int64(cap(c.ints))*8 + int64(cap(c.nulls))*4 + int64(cap(c.arena)) + int64(cap(c.ends))*4 + int64(len(c.hash))
}

// idBuilder collects a file's ids row by row.
type idBuilder struct {
	col idColumn
	n   int
}

// addInt adds an integral id.
func (b *idBuilder) addInt(x int64) {
	b.col.ints = append(b.col.ints, x)
	b.n++
}

// addNull adds a null id.
func (b *idBuilder) addNull() {
	switch b.col.kind {
	case idInts:
		b.col.nulls = append(b.col.nulls, uint32(b.n))
		b.col.ints = append(b.col.ints, 0)
	case idStrings:
		b.col.arena = append(b.col.arena, NullName...)
		b.col.ends = append(b.col.ends, uint32(len(b.col.arena)))
	}
	b.n++
}

// addText adds an id from its text, escaped (EscapeName; names fit it to
// the name length limit).
func (b *idBuilder) addText(s string) {
	b.col.arena = append(b.col.arena, EscapeName(s)...)
	b.col.ends = append(b.col.ends, uint32(len(b.col.arena)))
	b.n++
}

// done returns the column, its slices trimmed to their length.
func (b *idBuilder) done() idColumn {
	c := b.col
	c.ints = clip(c.ints)
	c.nulls = clip(c.nulls)
	c.arena = clip(c.arena)
	c.ends = clip(c.ends)
	return c
}

// clip returns s with its capacity cut to its length (a copy when that
// saves memory).
func clip[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
