package gds

import (
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/extents"
)

func TestPackOffsets(t *testing.T) {
	exts := []extents.Extent{{Length: 10}, {Length: 4096}, {Length: 0}, {Length: 1}}
	offs, total := PackOffsets(exts, extents.Alignment)
	if !reflect.DeepEqual(offs, []int64{0, 4096, 8192, 8192}) || total != 8193 {
		t.Errorf("aligned: %v %d", offs, total)
	}
	offs, total = PackOffsets(exts, 0)
	if !reflect.DeepEqual(offs, []int64{0, 10, 4106, 4106}) || total != 4107 {
		t.Errorf("packed: %v %d", offs, total)
	}
}
