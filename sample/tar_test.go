package sample_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// readTar reads the whole tar view of sh, in reads of chunk bytes.
func readTar(t *testing.T, tv *sample.Tar, chunk int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, chunk)
	for off := int64(0); ; {
		n, err := tv.ReadAt(context.Background(), buf, off)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if n == 0 {
			break
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
	return out
}

// TestTarView: a shard's tar view holds, in shard order, every sample's
// bytes as <key><ext> and its class as <key>.cls; its size is exact;
// archive/tar reads it to its end; any range read equals the same bytes of
// the whole; keys have no dots and match the per-file names. Ids that are
// duplicates, hold dots, are long (PAX names), not ASCII, reserved or null,
// with and without class folders, in bytes and JSON modes.
func TestTarView(t *testing.T) {
	long := strings.Repeat("é", 120)
	tbl := sampletest.New("id:string", "label:string", "data:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: [][]any{
		{"7", "x", []byte("\x89PNG\r\n\x1a\nxx")}, {"7", "y", []byte("raw")}, {nil, "x", []byte("a")},
		{"_samples", "_extents.tsv", []byte("b")}, {long, nil, bytes.Repeat([]byte("c"), 1000)},
		{strings.Repeat("k", 97), "x", []byte("d")}, {"a.b.c", "x", []byte("e")}, {"__null__", "y", []byte{}},
		{".hidden", "y", bytes.Repeat([]byte{0}, 512)},
	}}}, nil, nil)
	for _, spec := range []sample.Spec{{}, {ClassColumn: "label"}, {DataColumn: sample.NoData}} {
		sh := shards(t, newSamples(t, tbl, spec), 0)[0]
		tv := sh.Tar()
		whole := readTar(t, tv, 1<<20)
		if int64(len(whole)) != tv.Size() || tv.Size()%512 != 0 {
			t.Fatalf("%+v: read %d bytes, size %d", spec, len(whole), tv.Size())
		}
		tr := tar.NewReader(bytes.NewReader(whole))
		for pos := range sh.Len() {
			name := sh.Name(pos)
			key := sh.Key(pos)
			if strings.Contains(key, ".") || strings.Contains(key, "/") {
				t.Fatalf("%+v: key %q has a dot or a slash", spec, key)
			}
			if want := strings.ReplaceAll(name[:strings.LastIndexByte(name, '.')], ".", "%2E"); key != want {
				t.Fatalf("%+v: key %q of %q, want %q", spec, key, name, want)
			}
			content, err := sh.Content(context.Background(), pos)
			if err != nil {
				t.Fatal(err)
			}
			members := [][2]string{{key + name[strings.LastIndexByte(name, '.'):], string(content)}}
			if c := sh.ClassOf(pos); c >= 0 {
				members = append(members, [2]string{key + ".cls", sh.Classes()[c]})
			}
			for _, m := range members {
				h, err := tr.Next()
				if err != nil {
					t.Fatalf("%+v: member %s: %v", spec, m[0], err)
				}
				got, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if h.Name != m[0] || string(got) != m[1] || h.Typeflag != tar.TypeReg || h.Mode != 0o444 || !h.ModTime.Equal(t0) {
					t.Fatalf("%+v: member %q (%d bytes, mode %o, %v), want %q (%d bytes)", spec, h.Name, len(got), h.Mode, h.ModTime, m[0], len(m[1]))
				}
			}
		}
		if h, err := tr.Next(); err != io.EOF {
			t.Fatalf("%+v: after the last sample: %v %v, want the end of the archive", spec, h, err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			off := rng.Int64N(tv.Size() + 10)
			buf := make([]byte, 1+rng.IntN(3000))
			n, err := tv.ReadAt(context.Background(), buf, off)
			if err != nil {
				t.Fatal(err)
			}
			want := whole[min(off, int64(len(whole))):min(off+int64(len(buf)), int64(len(whole)))]
			if !bytes.Equal(buf[:n], want) {
				t.Fatalf("%+v: %d bytes at %d differ from the whole archive's", spec, len(buf), off)
			}
		}
	}
}

// TestTarViewFailsClosed: a sample that cannot be read fails every read
// of the archive that covers its bytes — never zeros or a shorter member —
// while reads of the other samples' ranges succeed.
func TestTarViewFailsClosed(t *testing.T) {
	tbl := sampletest.New("id:long", "label:double", "pixels:binary")
	rows := rowsOf(12, 0, func(i int) any { return float64(i % 3) }, img)
	rows[5][2] = []byte{1, 2, 3} // wrong length: not a 2x2 image
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: rows}}, nil, nil)
	sh := shards(t, newSamples(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"}), 0)[0]
	tv := sh.Tar()
	bad := -1
	for pos := range sh.Len() {
		if sh.Key(pos) == "5" {
			bad = pos
		}
	}
	// Every sample's group is the same size here: find the bad one's range.
	group := (tv.Size() - 1024) / int64(sh.Len())
	buf := make([]byte, group)
	for pos := range sh.Len() {
		_, err := tv.ReadAt(context.Background(), buf, int64(pos)*group)
		if pos == bad {
			var se *sample.SampleError
			if !errors.As(err, &se) {
				t.Fatalf("read of the bad sample's members: %v, want its SampleError", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("read of sample %d's members: %v", pos, err)
		}
	}
}
