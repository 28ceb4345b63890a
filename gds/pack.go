package gds

import "github.com/deltafs/deltafs/extents"

// PackOffsets returns where ReadBatch puts each extent in the destination
// buffer: extent i at offsets[i], each offset a multiple of align (align <= 1
// packs tightly), in order; total is the buffer size the batch needs.
func PackOffsets(exts []extents.Extent, align int64) (offsets []int64, total int64) {
	if align < 1 {
		align = 1
	}
	offsets = make([]int64, len(exts))
	for i, e := range exts {
		total = roundUp(total, align)
		offsets[i] = total
		total += e.Length
	}
	return offsets, total
}

func roundUp(n, align int64) int64 {
	if r := n % align; r != 0 {
		return n + align - r
	}
	return n
}
