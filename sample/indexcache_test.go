package sample

import (
	"reflect"
	"testing"
)

// TestIndexEncoding: a file's sample index survives the cache encoding,
// and an inconsistent one is refused rather than served.
func TestIndexEncoding(t *testing.T) {
	fs := &fileSamples{n: 3, rows: []int64{0, 2, 5}, stems: []string{"a", "b", "c"},
		class: []int32{1, 0, 1}, classes: []classVal{{s: "cat"}, {null: true}},
		sizes: []int64{10, 0, 7}, exts: []uint8{0, 1, 0}, extTab: []string{".png", ".bin"},
		jsonKey: CacheKey{Kind: "json", File: "f"}}
	fs.mem = fs.size()
	blob, err := encodeIndex(fs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeIndex(blob)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fs) {
		t.Errorf("decoded %+v, want %+v", got, fs)
	}
	// Fixed-size modes keep nil sizes and extensions.
	fixed := &fileSamples{n: 1, rows: []int64{4}, stems: []string{"x"}}
	blob, _ = encodeIndex(fixed)
	if got, err := decodeIndex(blob); err != nil || got.sizes != nil || got.exts != nil {
		t.Errorf("fixed-size index: %+v %v", got, err)
	}
	bad := &fileSamples{n: 2, rows: []int64{0, 1}, stems: []string{"a", "b"}, exts: []uint8{0, 3}, extTab: []string{".png"}}
	blob, _ = encodeIndex(bad)
	if _, err := decodeIndex(blob); err == nil {
		t.Error("an extension index past the table was accepted")
	}
	if _, err := decodeIndex([]byte("not gob")); err == nil {
		t.Error("garbage was decoded")
	}
}
