package sample_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
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

func newSamples(t *testing.T, tbl *sampletest.Table, spec sample.Spec) *sample.Samples {
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
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	lab := func(i int) any { return int32(i % 3) }
	tbl.Commit(t0, "WRITE", []sampletest.Add{
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
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	lab := func(i int) any { return int32(i % 2) }
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rowsOf(4, 0, lab, img)}}, nil, nil)
	tbl.Commit(t0.Add(time.Second), "WRITE", []sampletest.Add{{Path: "b", Rows: rowsOf(4, 10, lab, img)}}, nil, nil)
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
	tbl := sampletest.New("id:long", "label:double", "pixels:binary")
	rows := rowsOf(12, 0, func(i int) any { return float64(i) }, img)
	rows[5][2] = []byte{1, 2, 3} // wrong length
	rows[6][1] = nil             // null class
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rows}}, nil, nil)
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
	list := string(sh.List())
	if lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n"); len(lines) != 12 || lines[3] != "03/3.png\t"+fmt.Sprint(sh.Size(pos))+"\t03\t3" {
		t.Fatalf("list:\n%s", list)
	}
}

func TestDuplicateAndEscapedIDs(t *testing.T) {
	tbl := sampletest.New("id:string", "data:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: [][]any{
		{"7", []byte("\x89PNG\r\n\x1a\nxx")}, {"7", []byte("\xff\xd8\xff\xe0jpeg")}, {"7", []byte("raw")},
		{"a/b", []byte("x")}, {"..", []byte("x")}, {nil, []byte("x")}, {"7~1", []byte("x")},
		{"__null__", []byte("x")}, // the text, not a null: another name
	}}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{})
	sh := shards(t, s, 0)[0]
	var names []string
	for pos := range sh.Len() {
		names = append(names, sh.Name(pos))
	}
	want := []string{"7.png", "7~1.jpg", "7~2.bin", "a%2Fb.bin", "%2E..bin", "__null__.bin", "7%7E1.bin", "%5F_null__.bin"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	if got, _ := sh.Content(context.Background(), 1); string(got) != "\xff\xd8\xff\xe0jpeg" || sh.Size(1) != 8 {
		t.Fatalf("content %q size %d", got, sh.Size(1))
	}
}

func TestJSONSamplesAndDerivedIDs(t *testing.T) {
	tbl := sampletest.New("letter:string", "number:long")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "p/x.parquet", Rows: [][]any{{"a", int64(1)}, {"b", nil}}}}, nil, nil)
	s := newSamples(t, tbl, sample.Spec{})
	sh := shards(t, s, 0)[0]
	for pos := range sh.Len() {
		got, err := sh.Content(context.Background(), pos)
		if err != nil {
			t.Fatal(err)
		}
		want := string(sampletest.RenderJSON([]string{"letter", "number"}, []any{[]string{"a", "b"}[pos], []any{int64(1), nil}[pos]})) + "\n"
		if string(got) != want || sh.Size(pos) != int64(len(want)) {
			t.Fatalf("sample %d = %q (size %d), want %q", pos, got, sh.Size(pos), want)
		}
		name := sh.Name(pos)
		if !strings.HasSuffix(name, fmt.Sprintf("-%d.json", pos)) || len(name) != len("01234567-0.json") {
			t.Fatalf("derived name %q", name)
		}
	}
}

// TestUnreadableFileFailsItsShard: a data file that cannot be indexed
// fails every shard that needs it, with an error naming the table, the
// version and the file — never a shard with fewer samples, never empty
// placeholders — while shards that do not need it serve. SkipUnreadable
// leaves its rows out, with one warning.
func TestUnreadableFileFailsItsShard(t *testing.T) {
	build := func(spec sample.Spec) (*sample.Samples, *bytes.Buffer) {
		tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
		lab := func(i int) any { return int32(i % 2) }
		tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rowsOf(4, 0, lab, img)}, {Path: "b", Rows: rowsOf(4, 10, lab, img)}}, nil, nil)
		tbl.Vacuum("b")
		var logs bytes.Buffer
		opts := tbl.Options(spec)
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s, err := sample.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return s, &logs
	}
	img := sample.Image{H: 2, W: 2, C: 1}
	shard := func(s *sample.Samples, k int) (*sample.Shard, error) {
		v, err := s.Version(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return v.Shard(context.Background(), k)
	}
	wantFileErr := func(err error) {
		t.Helper()
		var fe *sample.FileError
		if !errors.As(err, &fe) || fe.Path != "b" || !errors.Is(err, storage.ErrNotExist) ||
			err.Error() != "mem://table version 0: data file b: object does not exist" {
			t.Fatalf("got %v, want the FileError of b", err)
		}
	}
	// Contiguous, 2 shards: shard 0 is file a, shard 1 file b.
	s, _ := build(sample.Spec{Image: img, Shards: 2})
	if sh, err := shard(s, 0); err != nil || sh.Len() != 4 {
		t.Fatalf("shard 0 (file a): %v", err)
	}
	_, err := shard(s, 1)
	wantFileErr(err)
	// Balanced (a class column): every shard needs every file.
	s, _ = build(sample.Spec{Image: img, Shards: 2, ClassColumn: "label"})
	for k := range 2 {
		_, err := shard(s, k)
		wantFileErr(err)
	}
	// Opt-in: the readable rows only, one warning.
	for _, spec := range []sample.Spec{{Image: img, Shards: 1, SkipUnreadable: true}, {Image: img, Shards: 2, ClassColumn: "label", SkipUnreadable: true}} {
		s, logs := build(spec)
		n := 0
		for k := range spec.Shards {
			sh, err := shard(s, k)
			if err != nil {
				t.Fatalf("%+v: %v", spec, err)
			}
			for pos := range sh.Len() {
				if _, err := sh.Content(context.Background(), pos); err != nil {
					t.Fatal(err)
				}
				if id := sh.ID(pos); len(id) > 1 {
					t.Fatalf("sample %s of the unreadable file listed", id)
				}
			}
			n += sh.Len()
		}
		if n != 4 || strings.Count(logs.String(), "--skip-unreadable") != 1 || !strings.Contains(logs.String(), "file=b") {
			t.Fatalf("%+v: %d samples, log:\n%s", spec, n, logs)
		}
	}
}

// TestRowCountsMustAgree: the log's row count (a hostile one included) is
// checked against the rows the file holds; nothing is sized by the claim.
func TestRowCountsMustAgree(t *testing.T) {
	for _, claim := range []int64{1 << 40, 30_000_000, 3, 0} {
		tbl := sampletest.New("id:long", "pixels:binary")
		tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rowsOf(5, 0, func(int) any { return nil }, img)}}, nil, nil)
		snap, _ := tbl.Snapshot(context.Background(), 0)
		snap.Files[0].NumRecords = claim
		s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, Shards: 2})
		v, err := s.Version(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			sh, err := v.Shard(context.Background(), k)
			if claim == 0 && k == 0 {
				if err != nil || sh.Len() != 0 {
					t.Fatalf("claim 0, shard 0 (nothing claimed): %v", err)
				}
				continue
			}
			want := fmt.Sprintf("the log says %d live rows (%d records less 0 deleted), the file has 5", claim, claim)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("claim %d shard %d: %v, want %q", claim, k, err, want)
			}
		}
	}
}

// TestBalancedLayout: with a class column, every shard holds every class
// with at least S samples although the table's rows are clustered by
// class, sizes differ by at most one, every sample is in exactly one
// shard, and rows appended by a later commit move only remainder rows.
func TestBalancedLayout(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	clustered := func(base int) func(i int) any { return func(i int) any { return int32((base + i) / 10) } }
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "z", Rows: rowsOf(30, 0, clustered(0), img)}, {Path: "a", Rows: rowsOf(14, 100, clustered(30), img)}}, nil, nil)
	tbl.Commit(t0.Add(time.Minute), "WRITE", []sampletest.Add{{Path: "m", Rows: rowsOf(27, 200, clustered(0), img)}}, nil, nil)
	const S = 4
	s := newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: S})
	where := map[int64]map[string]int{} // version -> id -> shard
	for v := range int64(2) {
		where[v] = map[string]int{}
		sizes := []int{}
		for k, sh := range shards(t, s, v) {
			sizes = append(sizes, sh.Len())
			if v == 0 && fmt.Sprint(sh.Classes()) != "[0 1 2 3 4]" {
				t.Fatalf("version 0 shard %d classes %v", k, sh.Classes())
			}
			for pos := range sh.Len() {
				id := sh.ID(pos)
				if _, dup := where[v][id]; dup {
					t.Fatalf("id %s in two shards", id)
				}
				where[v][id] = k
				if pos > 0 && sh.Global(pos) != sh.Global(pos-1)+1 {
					t.Fatal("global numbers not consecutive")
				}
			}
		}
		sort.Ints(sizes)
		if sizes[S-1]-sizes[0] > 1 {
			t.Fatalf("version %d sizes %v", v, sizes)
		}
	}
	if len(where[0]) != 44 || len(where[1]) != 71 {
		t.Fatalf("%d and %d samples", len(where[0]), len(where[1]))
	}
	moved := 0
	for id, k := range where[0] {
		if where[1][id] != k {
			moved++
		}
	}
	// At most the remainder rows (fewer than S per class, 5 classes).
	if moved > 5*(S-1) {
		t.Fatalf("%d of 44 rows changed shard after an append", moved)
	}
}

// TestReservedNames: no sample or class folder takes a name deltafs uses
// for its own entries, and the text "__null__" never reads as a null.
func TestReservedNames(t *testing.T) {
	tbl := sampletest.New("id:string", "data:binary", "path:string")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: [][]any{
		{"_samples", []byte("x"), "f.tsv"}, {"_extents", []byte("y"), "f.tsv"}, {"ok", []byte("z"), "f.tsv"},
	}}}, nil, nil)
	sh := shards(t, newSamples(t, tbl, sample.Spec{}), 0)[0]
	for pos, want := range []string{"%5Fsamples.tsv", "%5Fextents.tsv", "ok.tsv"} {
		if sh.Name(pos) != want {
			t.Fatalf("name %q, want %q", sh.Name(pos), want)
		}
		if back, ok := sample.UnescapeName(strings.TrimSuffix(sh.Name(pos), ".tsv")); !ok || back != []string{"_samples", "_extents", "ok"}[pos] {
			t.Fatalf("%q does not unescape to its id", sh.Name(pos))
		}
	}
	tbl = sampletest.New("id:long", "label:string", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: [][]any{
		{int64(1), "_samples.tsv", img(0)}, {int64(2), "_extents.tsv", img(1)}, {int64(3), "__null__", img(2)}, {int64(4), nil, img(3)},
	}}}, nil, nil)
	sh = shards(t, newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"}), 0)[0]
	if got := fmt.Sprint(sh.Classes()); got != "[%5F_null__ %5Fextents.tsv %5Fsamples.tsv __null__]" {
		t.Fatalf("classes %s", got)
	}
	lines := strings.Split(string(sh.List()), "\n")
	if lines[2] != "%5F_null__/3.png\t"+fmt.Sprint(sh.Size(2))+"\t%5F_null__\t3" || lines[3] != "__null__/4.png\t"+fmt.Sprint(sh.Size(3))+"\t__null__\t4" {
		t.Fatalf("sample list:\n%s", sh.List())
	}
}

// TestSampleListExact: _samples.tsv's size (computed from field lengths)
// and its bytes read at any offset agree with its lines formatted one by
// one, for ids that are integers, nulls, duplicates, reserved names, long
// and escaped strings, with and without class folders.
func TestSampleListExact(t *testing.T) {
	long := strings.Repeat("é", 200)
	tbl := sampletest.New("id:string", "label:string", "data:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: [][]any{
		{"7", "x", []byte("\x89PNG\r\n\x1a\nxx")}, {"7", "y", []byte("raw")}, {nil, "x", []byte("a")},
		{"_samples", "_extents.tsv", []byte("b")}, {long, nil, []byte("c")}, {long + "x", "x", []byte("d")},
		{"a/b\n", "x", []byte("e")}, {"__null__", "y", []byte("f")},
	}}}, nil, nil)
	for _, spec := range []sample.Spec{{}, {ClassColumn: "label"}, {DataColumn: sample.NoData}} {
		sh := shards(t, newSamples(t, tbl, spec), 0)[0]
		var want []byte
		for pos := range sh.Len() {
			want = fmt.Appendf(want, "%s\t%d\t", sh.Path(pos), sh.Size(pos))
			if c := sh.ClassOf(pos); c >= 0 {
				want = append(want, sh.Classes()[c]...)
			}
			want = fmt.Appendf(want, "\t%s\n", sh.ID(pos))
		}
		if sh.ListSize() != int64(len(want)) || string(sh.List()) != string(want) {
			t.Fatalf("%+v: sample list of %d bytes, want %d:\n%s\nwant:\n%s", spec, sh.ListSize(), len(want), sh.List(), want)
		}
		for off := range len(want) {
			b := make([]byte, 7)
			n := sh.ListAt(b, int64(off))
			if string(b[:n]) != string(want[off:min(len(want), off+7)]) {
				t.Fatalf("%+v: bytes at %d: %q, want %q", spec, off, b[:n], want[off:min(len(want), off+7)])
			}
		}
	}
}

// TestManyExtensions: a file whose samples take more than 255 extensions
// (from a path column) names the ones past the 255th .bin, never another
// sample's extension.
func TestManyExtensions(t *testing.T) {
	tbl := sampletest.New("id:long", "data:binary", "path:string")
	var rows [][]any
	for i := range 300 {
		rows = append(rows, []any{int64(i), []byte("raw"), fmt.Sprintf("f.e%d", i)})
	}
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rows}}, nil, nil)
	sh := shards(t, newSamples(t, tbl, sample.Spec{}), 0)[0]
	for pos := range sh.Len() {
		want := fmt.Sprintf("%d.e%d", pos, pos)
		if pos >= 255 {
			want = fmt.Sprintf("%d.bin", pos)
		}
		if sh.Name(pos) != want {
			t.Fatalf("sample %d named %q, want %q", pos, sh.Name(pos), want)
		}
	}
}
