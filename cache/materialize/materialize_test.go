package materialize_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/cache/materialize"
	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func rows(n, base, size int) [][]any {
	out := make([][]any, n)
	for i := range out {
		b := make([]byte, size+i%7*1000)
		for j := range b {
			b[j] = byte(base + i + j)
		}
		out[i] = []any{int64(base + i), int32(i % 3), b}
	}
	return out
}

// TestListMatchesContent: for every sample of every version and shard,
// in each sample mode (raw bytes, images, JSON rows), the extent list's
// extent holds exactly the sample's bytes; computing the extent list gives the
// same text as materialising it; the xattr agrees; versions sharing a data
// file share the entries; and an evicted entry comes back at the same
// place.
func TestListMatchesContent(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []sample.Spec{
		{Shards: 2},
		{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: 3},
		{DataColumn: "-", Shards: 1},
	} {
		tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
		img := spec.Image.H > 0
		size := 5000
		if img {
			size = 4
		}
		pix := func(n, base int) [][]any {
			r := rows(n, base, size)
			if img {
				for _, row := range r {
					row[2] = row[2].([]byte)[:4]
				}
			}
			return r
		}
		tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: pix(30, 0)}, {Path: "b.parquet", Rows: pix(20, 100)}}, nil, nil)
		tbl.Commit(t0.Add(time.Hour), "WRITE", []sampletest.Add{{Path: "c.parquet", Rows: pix(5, 200)}}, nil, nil)
		s, err := sample.New(tbl.Options(spec))
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(cache.Options{Dir: t.TempDir(), SkipFsync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		src, err := materialize.New(c, "memtable", nil)
		if err != nil {
			t.Fatal(err)
		}
		where := map[string]extents.Extent{} // by sample path (ids are unique): the same in both versions
		for v := range int64(2) {
			ver, err := s.Version(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for k := range ver.Shards() {
				sh, err := ver.Shard(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				computed, err := src.List(ctx, sh, false)
				if err != nil {
					t.Fatal(err)
				}
				text, err := src.List(ctx, sh, true)
				if err != nil {
					t.Fatal(err)
				}
				if len(text) != len(computed) {
					t.Fatalf("%v %s: materialised extent list is %d bytes, the computed one %d", spec, sh, len(text), len(computed))
				}
				entries, err := extents.ParseList(bytes.NewReader(text))
				if err != nil {
					t.Fatal(err)
				}
				shape, err := extents.ParseList(bytes.NewReader(computed))
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != sh.Len() {
					t.Fatalf("%s: %d entries for %d samples", sh, len(entries), sh.Len())
				}
				for pos, e := range entries {
					n++
					want, err := sh.Content(ctx, pos)
					if err != nil {
						t.Fatal(err)
					}
					if e.Sample != sh.Path(pos) || !e.Aligned() || !bytes.Equal(pread(t, e.Extent), want) {
						t.Fatalf("%v %s %s: extent %s does not hold the sample's %d bytes", spec, sh, e.Sample, e.Extent, len(want))
					}
					if e.Sum != extents.ChecksumOf(want) {
						t.Fatalf("%s: extent list checksum %s, the sample's CRC-32 is %s", e.Sample, e.Sum, extents.ChecksumOf(want))
					}
					// Computed without I/O: the same line, checksum unknown.
					if c := shape[pos]; c.Sum.Known() || c.Sample != e.Sample || c.Path != e.Path || c.Offset != e.Offset || c.Length != e.Length {
						t.Fatalf("%s: computed line %+v, materialised %+v", e.Sample, c, e)
					}
					x, err := src.Xattr(ctx, sh, pos)
					if err != nil {
						t.Fatal(err)
					}
					if got, _ := e.Extent.MarshalText(); string(x) != string(got) {
						t.Fatalf("xattr %q, extent list %q", x, got)
					}
					if prev, ok := where[e.Sample]; ok && prev != e.Extent {
						t.Fatalf("%s: version %d has extent %s, an earlier version %s: entries not shared", e.Sample, v, e.Extent, prev)
					}
					where[e.Sample] = e.Extent
				}
				// Evict one entry: the next Extent writes it back.
				e := entries[len(entries)/2]
				if err := os.Remove(e.Path); err != nil {
					t.Fatal(err)
				}
				got, err := src.Extent(ctx, sh, len(entries)/2)
				if err != nil || got != e.Extent {
					t.Fatalf("after eviction: %s %v, want %s", got, err, e.Extent)
				}
			}
			if want := []int{50, 55}[v]; n != want {
				t.Fatalf("%v version %d: %d samples, want %d", spec, v, n, want)
			}
		}
	}
}

// TestListRewritesCorrupt: an entry damaged in place after an extent list
// was read (a flipped payload byte), an entry truncated, and two entries'
// files swapped are each rewritten by the next materialising extent list,
// whose checksums are those of the true bytes; the xattr of a damaged
// sample alone rewrites its entry too.
func TestListRewritesCorrupt(t *testing.T) {
	ctx := context.Background()
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: rows(12, 0, 9000)}}, nil, nil)
	s, err := sample.New(tbl.Options(sample.Spec{Shards: 1}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Dir: t.TempDir(), SkipFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src, err := materialize.New(c, "memtable", nil)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := s.Version(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ver.Shard(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	list := func() []extents.Entry {
		t.Helper()
		text, err := src.List(ctx, sh, true)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := extents.ParseList(bytes.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		for pos, e := range entries {
			want, err := sh.Content(ctx, pos)
			if err != nil {
				t.Fatal(err)
			}
			if e.Sum != extents.ChecksumOf(want) || !bytes.Equal(pread(t, e.Extent), want) {
				t.Fatalf("%s: extent %s (crc %s) does not hold the sample's bytes (crc %s)", e.Sample, e.Extent, e.Sum, extents.ChecksumOf(want))
			}
		}
		return entries
	}
	before := list()
	damage := func(e extents.Extent, off int64) {
		f, err := os.OpenFile(e.Path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 1)
		f.ReadAt(b, e.Offset+off)
		b[0] ^= 0x01
		if _, err := f.WriteAt(b, e.Offset+off); err != nil {
			t.Fatal(err)
		}
	}
	damage(before[0].Extent, 4321)
	if err := os.Truncate(before[1].Path, before[1].Offset+100); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(before[2].Path, before[2].Path+".x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(before[3].Path, before[2].Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(before[2].Path+".x", before[3].Path); err != nil {
		t.Fatal(err)
	}
	if after := list(); len(after) != len(before) {
		t.Fatalf("%d entries, then %d", len(before), len(after))
	}
	// The xattr alone: verified and rewritten too.
	damage(before[5].Extent, 0)
	x, err := src.Xattr(ctx, sh, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := before[5].Extent.MarshalText(); string(x) != string(want) {
		t.Fatalf("xattr %q, want %q", x, want)
	}
	if got, want := pread(t, before[5].Extent), must(sh.Content(ctx, 5)); !bytes.Equal(got, want) {
		t.Fatal("the xattr did not rewrite the damaged entry")
	}
	if n := c.Stats().Corrupt; n != 3 {
		t.Fatalf("%d corrupt entries dropped, want 3 (flipped, truncated, flipped; swapped files are other keys' entries)", n)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func pread(t *testing.T, e extents.Extent) []byte {
	t.Helper()
	f, err := os.Open(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, e.Length)
	if n, _ := f.ReadAt(b, e.Offset); int64(n) != e.Length {
		t.Fatalf("%s: read %d bytes", e, n)
	}
	return b
}

func TestNewNeedsDiskTier(t *testing.T) {
	c, err := cache.New(cache.Options{MemBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := materialize.New(c, "t", nil); err == nil || !strings.Contains(err.Error(), "disk cache") {
		t.Fatalf("New without a disk tier: %v", err)
	}
}
