package sample

import (
	"reflect"
	"testing"

	"github.com/deltafs/deltafs/page"
)

// TestIndexEncoding: a file's sample index survives the cache encoding,
// and an inconsistent or truncated one is refused rather than served.
func TestIndexEncoding(t *testing.T) {
	for _, ids := range []idColumn{
		{kind: idStrings, arena: []byte("abc"), ends: []uint32{1, 2, 3}},
		{kind: idInts, ints: []int64{-7, 0, 1 << 40}, nulls: []uint32{1}},
		{kind: idDerived, hash: "0123abcd"},
	} {
		fs := &fileSamples{n: 3, rows: []uint32{0, 2, 5}, ids: ids,
			class: []uint16{1, 0, 1}, classes: []classVal{{s: "cat"}, {null: true}},
			sizes: []uint32{10, 0, 7}, exts: []uint8{0, 1, 0}, extTab: []string{".png", ".bin"},
			jsonKey: page.Key{Kind: "json", File: "f"}}
		fs.mem = fs.size()
		blob, err := encodeIndex(fs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeIndex(blob)
		if err != nil {
			t.Fatal(err)
		}
		got.ids.hash = fs.ids.hash // set from the file's path by the caller
		got.mem = fs.mem
		if !reflect.DeepEqual(got, fs) {
			t.Errorf("decoded %+v, want %+v", got, fs)
		}
		for cut := range len(blob) {
			if _, err := decodeIndex(blob[:cut]); err == nil {
				t.Fatalf("a truncated index (%d of %d bytes) was decoded", cut, len(blob))
			}
		}
	}
	// Fixed-size modes keep nil sizes and extensions.
	fixed := &fileSamples{n: 1, rows: []uint32{4}, ids: idColumn{kind: idDerived}}
	blob, _ := encodeIndex(fixed)
	if got, err := decodeIndex(blob); err != nil || got.sizes != nil || got.exts != nil {
		t.Errorf("fixed-size index: %+v %v", got, err)
	}
	bad := &fileSamples{n: 2, ids: idColumn{kind: idDerived}, exts: []uint8{0, 3}, extTab: []string{".png"}}
	blob, _ = encodeIndex(bad)
	if _, err := decodeIndex(blob); err == nil {
		t.Error("an extension index past the table was accepted")
	}
	if _, err := decodeIndex([]byte("not an index")); err == nil {
		t.Error("garbage was decoded")
	}
}
