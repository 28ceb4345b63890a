package sample

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// A blob packs a run of values (the rows of one Parquet page, or the JSON
// renderings of one file) into one byte slice, so that a byte cache — memory
// or disk — can hold it and a value is found without copying:
//
//	n uint32 | firstRow int64 | n null flags | (n+1) uint32 offsets | data
//
// all little-endian; value i is data[off[i]:off[i+1]].
const blobHeader = 12

func packBlob(firstRow int64, vals [][]byte, nulls []bool) []byte {
	n := len(vals)
	total := 0
	for _, v := range vals {
		total += len(v)
	}
	b := make([]byte, blobHeader+n+4*(n+1)+total)
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	binary.LittleEndian.PutUint64(b[4:], uint64(firstRow))
	offs := b[blobHeader+n:]
	data := b[blobHeader+n+4*(n+1):]
	pos := 0
	for i, v := range vals {
		if nulls != nil && nulls[i] {
			b[blobHeader+i] = 1
		}
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(pos))
		pos += copy(data[pos:], v)
	}
	binary.LittleEndian.PutUint32(offs[4*n:], uint32(pos))
	return b
}

// packOffsets packs values given as one data slice and n+1 offsets.
func packOffsets(firstRow int64, data []byte, offs []uint32, nulls []bool) []byte {
	n := len(offs) - 1
	b := make([]byte, blobHeader+n+4*(n+1), blobHeader+n+4*(n+1)+len(data))
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	binary.LittleEndian.PutUint64(b[4:], uint64(firstRow))
	for i := range n {
		if nulls[i] {
			b[blobHeader+i] = 1
		}
	}
	o := b[blobHeader+n:]
	for i, off := range offs {
		binary.LittleEndian.PutUint32(o[4*i:], off)
	}
	return append(b, data...)
}

// blobLen is the number of values in a blob (0 for a malformed one).
func blobLen(b []byte) int {
	if len(b) < blobHeader {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(b))
	if len(b) < blobHeader+n+4*(n+1) {
		return 0
	}
	return n
}

func blobFirstRow(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b[4:])) }

// blobValue is value i (nil for a null or out of range). The slice aliases
// the blob.
func blobValue(b []byte, i int) []byte {
	n := blobLen(b)
	if i < 0 || i >= n || b[blobHeader+i] == 1 {
		return nil
	}
	offs := b[blobHeader+n:]
	data := b[blobHeader+n+4*(n+1):]
	lo, hi := binary.LittleEndian.Uint32(offs[4*i:]), binary.LittleEndian.Uint32(offs[4*i+4:])
	if lo > hi || int(hi) > len(data) {
		return nil
	}
	return data[lo:hi:hi]
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
