package sample_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/memtable"
	"github.com/deltafs/deltafs/storage"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func rowsOf(n, idBase int, label func(i int) any, pix func(i int) []byte) [][]any {
	out := make([][]any, n)
	for i := range out {
		out[i] = []any{int64(idBase + i), label(i), pix(i)}
	}
	return out
}

func img(i int) []byte {
	p := make([]byte, 4)
	for j := range p {
		p[j] = byte(i + j)
	}
	return p
}

func newSamples(t *testing.T, tbl *memtable.Table, spec sample.Spec) *sample.Samples {
	t.Helper()
	s, err := sample.New(tbl.Options(spec))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func shards(t *testing.T, s *sample.Samples, v int64) []*sample.Shard {
	t.Helper()
	ver, err := s.Version(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	var out []*sample.Shard
	for k := range ver.Shards() {
		sh, err := ver.Shard(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sh)
	}
	return out
}

func TestShardsSplitEvenlyAndReadOnlyTheirFiles(t *testing.T) {
	tbl := memtable.New("id:long", "label:integer", "pixels:binary")
	lab := func(i int) any { return int32(i % 3) }
	tbl.Commit(t0, "WRITE", []memtable.Add{
		{Path: "a.parquet", Rows: rowsOf(10, 0, lab, img)},
		{Path: "b.parquet", Rows: rowsOf(7, 100, lab, img)},
		{Path: "c.parquet", Rows: rowsOf(5, 200, lab, img)},
		{Path: "d.parquet", Rows: rowsOf(9, 300, lab, img)},
	}, nil, nil)
	tbl.Commit(t0.Add(time.Minute), "DELETE", nil, nil, map[string][]int64{"b.parquet": {0, 3}})
	s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, Shards: 3})

	ver, _ := s.Version(context.Background(), 1)
	sh0, err := ver.Shard(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// 29 live samples: shard 0 is [0, 9) — file a only.
	if sh0.Len() != 9 || tbl.Calls["a.parquet"] != 1 || tbl.Calls["b.parquet"]+tbl.Calls["c.parquet"]+tbl.Calls["d.parquet"] != 0 {
		t.Fatalf("shard 0: %d samples, scans %v", sh0.Len(), tbl.Calls)
	}
	seen := map[string]int{}
	lens := []int{}
	for _, sh := range shards(t, s, 1) {
		lens = append(lens, sh.Len())
		for pos := range sh.Len() {
			seen[sh.ID(pos)]++
		}
	}
	sort.Ints(lens)
	if len(seen) != 29 || lens[2]-lens[0] > 1 {
		t.Fatalf("shards %v cover %d ids, want 29 (sizes within one)", lens, len(seen))
	}
	for id, n := range seen {
		if n != 1 || id == "100" || id == "103" {
			t.Fatalf("id %s appears %d times (deleted ids 100 and 103 must be absent)", id, n)
		}
	}
}

func TestVersionsShareFileMetadata(t *testing.T) {
	tbl := memtable.New("id:long", "label:integer", "pixels:binary")
	lab := func(i int) any { return int32(i % 2) }
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: rowsOf(4, 0, lab, img)}}, nil, nil)
	tbl.Commit(t0.Add(time.Second), "WRITE", []memtable.Add{{Path: "b", Rows: rowsOf(4, 10, lab, img)}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}})
	v0 := shards(t, s, 0)
	v1 := shards(t, s, 1)
	if tbl.Calls["a"] != 1 || tbl.Calls["b"] != 1 {
		t.Fatalf("scans %v: version 1 must re-read only the new file", tbl.Calls)
	}
	if v0[0].Len() != 4 || v1[0].Len() != 8 {
		t.Fatalf("lens %d %d", v0[0].Len(), v1[0].Len())
	}
}

func TestImageSamples(t *testing.T) {
	tbl := memtable.New("id:long", "label:double", "pixels:binary")
	rows := rowsOf(12, 0, func(i int) any { return float64(i) }, img)
	rows[5][2] = []byte{1, 2, 3} // wrong length
	rows[6][1] = nil             // null class
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: rows}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"})
	sh := shards(t, s, 0)[0]
	want := []string{"00", "01", "02", "03", "04", "05", "07", "08", "09", "10", "11", sample.NullName}
	if got := sh.Classes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("classes %v, want %v", got, want)
	}
	c, _ := sh.ClassIndex("03")
	pos, ok := sh.Lookup("3.png", c)
	if !ok || sh.Path(pos) != "03/3.png" || sh.Size(pos) != (sample.Image{H: 2, W: 2, C: 1}).PNGSize() {
		t.Fatalf("lookup 03/3.png: %v %q size %d", ok, sh.Path(pos), sh.Size(pos))
	}
	data, err := sh.Content(context.Background(), pos)
	if err != nil {
		t.Fatal(err)
	}
	im, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _, _ := im.At(1, 1).RGBA(); byte(r>>8) != 6 {
		t.Fatalf("pixel (1,1) = %d, want 6", r>>8)
	}
	if _, ok := sh.Lookup("3.png", -1); ok {
		t.Fatal("a sample in a class folder was found at the shard root")
	}
	c5, _ := sh.ClassIndex("05")
	pos5, _ := sh.Lookup("5.png", c5)
	var se *sample.SampleError
	if _, err := sh.Content(context.Background(), pos5); !errors.As(err, &se) {
		t.Fatalf("wrong-length pixels: %v, want a SampleError", err)
	}
	manifest := string(sh.Manifest())
	if lines := strings.Split(strings.TrimSuffix(manifest, "\n"), "\n"); len(lines) != 12 || lines[3] != "03/3.png\t"+fmt.Sprint(sh.Size(pos))+"\t03\t3" {
		t.Fatalf("manifest:\n%s", manifest)
	}
}

func TestDuplicateAndEscapedIDs(t *testing.T) {
	tbl := memtable.New("id:string", "data:binary")
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: [][]any{
		{"7", []byte("\x89PNG\r\n\x1a\nxx")}, {"7", []byte("\xff\xd8\xffjpeg")}, {"7", []byte("raw")},
		{"a/b", []byte("x")}, {"..", []byte("x")}, {nil, []byte("x")}, {"7~1", []byte("x")},
	}}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{})
	sh := shards(t, s, 0)[0]
	var names []string
	for pos := range sh.Len() {
		names = append(names, sh.Name(pos))
	}
	want := []string{"7.png", "7~1.jpg", "7~2.bin", "a%2Fb.bin", "%2E..bin", "__null__.bin", "7%7E1.bin"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	if got, _ := sh.Content(context.Background(), 1); string(got) != "\xff\xd8\xffjpeg" || sh.Size(1) != 7 {
		t.Fatalf("content %q size %d", got, sh.Size(1))
	}
}

func TestJSONSamplesAndDerivedIDs(t *testing.T) {
	tbl := memtable.New("letter:string", "number:long")
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "p/x.parquet", Rows: [][]any{{"a", int64(1)}, {"b", nil}}}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{})
	sh := shards(t, s, 0)[0]
	for pos := range sh.Len() {
		got, err := sh.Content(context.Background(), pos)
		if err != nil {
			t.Fatal(err)
		}
		want := string(memtable.RenderJSON([]string{"letter", "number"}, []any{[]string{"a", "b"}[pos], []any{int64(1), nil}[pos]})) + "\n"
		if string(got) != want || sh.Size(pos) != int64(len(want)) {
			t.Fatalf("sample %d = %q (size %d), want %q", pos, got, sh.Size(pos), want)
		}
		name := sh.Name(pos)
		if !strings.HasSuffix(name, fmt.Sprintf("-%d.json", pos)) || len(name) != len("01234567-0.json") {
			t.Fatalf("derived name %q", name)
		}
	}
}

func TestVacuumedFileFailsOnlyItsSamples(t *testing.T) {
	tbl := memtable.New("id:long", "label:integer", "pixels:binary")
	lab := func(i int) any { return int32(1) }
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: rowsOf(3, 0, lab, img)}, {Path: "b", Rows: rowsOf(3, 10, lab, img)}}, nil, nil)
	tbl.Vacuum("b")
	s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"})
	sh := shards(t, s, 0)[0]
	if sh.Len() != 6 || sh.RootLen() != 3 || len(sh.Class(0)) != 3 {
		t.Fatalf("len %d, at root %d", sh.Len(), sh.RootLen())
	}
	for pos := range sh.Len() {
		_, err := sh.Content(context.Background(), pos)
		if pos < 3 && err != nil {
			t.Fatalf("sample %d of the readable file: %v", pos, err)
		}
		if pos >= 3 && !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("sample %d of the vacuumed file: %v", pos, err)
		}
	}
}

func TestNoSampleTakesTheManifestName(t *testing.T) {
	tbl := memtable.New("id:string", "data:binary", "path:string")
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: [][]any{{"_samples", []byte("x"), "f.tsv"}}}}, nil, nil)
	sh := shards(t, newSamples(t, tbl, sample.Spec{}), 0)[0]
	if sh.Name(0) != "_samples~1.tsv" {
		t.Fatalf("name %q", sh.Name(0))
	}
}
