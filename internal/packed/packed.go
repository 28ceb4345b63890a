// Package packed is the layout of a run of values packed into one byte slice,
// as the page reader (package page) keeps a decoded page and package sample
// keeps the JSON renderings of a data file's rows in the same caches.
package packed

import "encoding/binary"

// A blob packs a run of values (the rows of one Parquet page, or the JSON
// renderings of one file) into one byte slice, so that a byte cache — memory
// or disk — can hold it and a value is found without copying:
//
//	n uint32 | firstRow int64 | n null flags | (n+1) uint32 offsets | data
//
// all little-endian; value i is data[off[i]:off[i+1]].
const Header = 12

// Pack packs vals (nulls: which are null; nil: none) as the run starting at
// row firstRow.
func Pack(firstRow int64, vals [][]byte, nulls []bool) []byte {
	n := len(vals)
	total := 0
	for _, v := range vals {
		total += len(v)
	}
	b := make([]byte, Header+n+4*(n+1)+total)
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	binary.LittleEndian.PutUint64(b[4:], uint64(firstRow))
	offs := b[Header+n:]
	data := b[Header+n+4*(n+1):]
	pos := 0
	for i, v := range vals {
		if nulls != nil && nulls[i] {
			b[Header+i] = 1
		}
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(pos))
		pos += copy(data[pos:], v)
	}
	binary.LittleEndian.PutUint32(offs[4*n:], uint32(pos))
	return b
}

// PackOffsets packs values given as one data slice and n+1 offsets.
func PackOffsets(firstRow int64, data []byte, offs []uint32, nulls []bool) []byte {
	n := len(offs) - 1
	b := make([]byte, Header+n+4*(n+1), Header+n+4*(n+1)+len(data))
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	binary.LittleEndian.PutUint64(b[4:], uint64(firstRow))
	for i := range n {
		if nulls[i] {
			b[Header+i] = 1
		}
	}
	o := b[Header+n:]
	for i, off := range offs {
		binary.LittleEndian.PutUint32(o[4*i:], off)
	}
	return append(b, data...)
}

// Len is the number of values in a blob (0 for a malformed one).
func Len(b []byte) int {
	if len(b) < Header {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(b))
	if len(b) < Header+n+4*(n+1) {
		return 0
	}
	return n
}

// FirstRow is the row of a blob's first value.
func FirstRow(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b[4:])) }

// Value is value i (nil for a null or out of range). The slice aliases
// the blob.
func Value(b []byte, i int) []byte {
	n := Len(b)
	if i < 0 || i >= n || b[Header+i] == 1 {
		return nil
	}
	offs := b[Header+n:]
	data := b[Header+n+4*(n+1):]
	lo, hi := binary.LittleEndian.Uint32(offs[4*i:]), binary.LittleEndian.Uint32(offs[4*i+4:])
	if lo > hi || int(hi) > len(data) {
		return nil
	}
	return data[lo:hi:hi]
}

// CopyAt copies v[off:] into b and returns the count copied (nothing for
// an offset outside v).
func CopyAt(b, v []byte, off int64) int {
	if off < 0 || off >= int64(len(v)) {
		return 0
	}
	return copy(b, v[off:])
}
