package page

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/delta"

	"github.com/deltafs/deltafs/storage"
)

type streamRow struct {
	ID   int64  `parquet:"id"`
	Data []byte `parquet:"data,optional,plain"`
}

type streamRowRequired struct {
	ID   int64  `parquet:"id"`
	Data []byte `parquet:"data,plain"`
}

// streamRows are the rows of the test files: small values, nulls and two
// large ones (noise, and a text that compresses), in one page.
func streamRows(size int) [][]byte {
	rng := rand.NewChaCha8([32]byte{5})
	noise := make([]byte, size)
	_, _ = rng.Read(noise)
	var text bytes.Buffer
	for i := 0; text.Len() < size; i++ {
		text.WriteString("sample ")
		text.WriteString(strings.Repeat("ab", i%97))
		text.Write(noise[i%1000 : i%1000+i%13])
	}
	return [][]byte{[]byte("a"), noise, nil, text.Bytes()[:size], []byte("\x89PNG\r\n\x1a\n tail")}
}

// writeStreamFile writes rows into one row group and one page of a
// Parquet file under root, with codec and data page version v.
func writeStreamFile(t *testing.T, root, name string, rows [][]byte, codec compress.Codec, v int, required bool) FileRef {
	t.Helper()
	path := filepath.Join(root, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// As deltafs's writer, Spark's and delta-rs's write a large binary
	// value: without page statistics (parquet-mr leaves out those past
	// 4 KiB), which would repeat the value in the page's header.
	opts := []parquet.WriterOption{parquet.Compression(codec), parquet.DataPageVersion(v), parquet.PageBufferSize(1 << 30), parquet.SkipPageStatistics("data"), parquet.SkipPageBounds("data")}
	if required {
		w := parquet.NewGenericWriter[streamRowRequired](f, opts...)
		for i, r := range rows {
			if _, err := w.Write([]streamRowRequired{{ID: int64(i), Data: r}}); err != nil {
				t.Fatal(err)
			}
		}
		err = w.Close()
	} else {
		w := parquet.NewGenericWriter[streamRow](f, opts...)
		for i, r := range rows {
			if _, err := w.Write([]streamRow{{ID: int64(i), Data: r}}); err != nil {
				t.Fatal(err)
			}
		}
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return FileRef{Path: name, Key: name, Size: info.Size(), ID: "1"}
}

// headBytes is the first bytes of each value Heads is asked for: what
// package sample sniffs (its sniffBytes).
const headBytes = 64

// readStreamed reads row's value with ValueAt in reads of chunk bytes.
func readStreamed(p *Fetcher, ref FileRef, row int64, chunk int) ([]byte, error) {
	var out []byte
	buf := make([]byte, chunk)
	for off := int64(0); ; off += int64(chunk) {
		n, err := p.ValueAt(context.Background(), ref, "data", row, buf, off)
		if err != nil {
			return nil, err
		}
		out = append(out, buf[:n]...)
		if n < chunk {
			return out, nil
		}
	}
}

// A page larger than SpillAbove is decoded as a stream into its spill
// file, under every codec, data page version and repetition, and serves
// exactly the bytes, sizes and first bytes the decode in memory gives:
// decoded once, for the index (Heads) and every read after it.
func TestPageStream(t *testing.T) {
	const size = 1 << 20
	rows := streamRows(size)
	root := t.TempDir()
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw, &parquet.Brotli} {
		for _, v := range []int{1, 2} {
			for _, required := range []bool{false, true} {
				name := codec.String() + "-v" + string(rune('0'+v))
				rs := rows
				if required {
					name += "-required"
					rs = append([][]byte{}, rows...)
					rs[2] = []byte{} // no nulls in a required column
				}
				t.Run(name, func(t *testing.T) {
					ref := writeStreamFile(t, root, name+".parquet", rs, codec, v, required)
					p := NewFetcher(st, Options{Cache: NewMemCache(1 << 20), SpillAbove: 256 << 10, SpillDir: t.TempDir()})
					var sizes []int64
					var heads [][]byte
					if err := p.Heads(context.Background(), ref, "data", headBytes, func(row, size int64, head []byte) error {
						sizes = append(sizes, size)
						heads = append(heads, append([]byte(nil), head...))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					for i, want := range rs {
						// The first bytes are what package sample sniffs
						// an extension from (with the size).
						if wantHead := want[:min(len(want), headBytes)]; sizes[i] != int64(len(want)) || !bytes.Equal(heads[i], wantHead) {
							t.Errorf("row %d: size %d, head %q; want %d, %q", i, sizes[i], heads[i], len(want), wantHead)
						}
						got, err := readStreamed(p, ref, int64(i), 100<<10-7)
						if err != nil {
							t.Fatalf("row %d: %v", i, err)
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("row %d: %d bytes differ from the %d written", i, len(got), len(want))
						}
					}
					if s := p.Stats(); s.PagesStreamed != 1 || s.PagesDecoded != 1 {
						t.Fatalf("%d pages streamed, %d decoded: want the one page, streamed once", s.PagesStreamed, s.PagesDecoded)
					}
				})
			}
		}
	}
}

// A streamed page costs memory independent of its size: a window, a
// chunk and a few bytes a value, where the decode in memory allocates
// several times the page.
func TestPageStreamMemory(t *testing.T) {
	const size = 48 << 20
	root := t.TempDir()
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	rows := streamRows(size)[:2]
	for _, codec := range []compress.Codec{&parquet.Snappy, &parquet.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			ref := writeStreamFile(t, root, codec.String()+"-mem.parquet", rows, codec, 1, false)
			p := NewFetcher(st, Options{Cache: NewMemCache(1 << 20), SpillAbove: 1 << 20, SpillDir: t.TempDir()})
			buf := make([]byte, 1<<20)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n, err := p.ValueAt(context.Background(), ref, "data", 1, buf, 5<<20)
			runtime.ReadMemStats(&after)
			if err != nil || n != len(buf) || !bytes.Equal(buf, rows[1][5<<20:6<<20]) {
				t.Fatalf("read %d bytes, %v", n, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
				t.Fatalf("the first read of a %d MiB value allocated %d MiB", size>>20, alloc>>20)
			}
			if p.Stats().PagesStreamed != 1 {
				t.Fatal("the page was not streamed")
			}
		})
	}
}

// Damaged pages fail, or, where nothing can tell (a flipped bit in a page
// without a checksum), give what the decode in memory gives: a streamed
// page never serves other bytes than the whole page's decode.
func TestPageStreamDamaged(t *testing.T) {
	const size = 1 << 20
	rows := streamRows(size)
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Lz4Raw, &parquet.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			root := t.TempDir()
			st, err := storage.NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			ref := writeStreamFile(t, root, "ok.parquet", rows, codec, 1, false)
			clean, err := os.ReadFile(filepath.Join(root, ref.Key))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(clean))))
			for trial := range 12 {
				b := append([]byte{}, clean...)
				// Inside the data column's page: past the id column's.
				at := 4 + 200 + rng.IntN(size)
				b[at] ^= byte(1 + rng.IntN(255))
				name := "bad" + string(rune('a'+trial)) + ".parquet"
				if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
				bad := FileRef{Path: name, Key: name, Size: ref.Size, ID: "1"}
				streamed := NewFetcher(st, Options{Cache: NewMemCache(1 << 20), SpillAbove: 256 << 10, SpillDir: t.TempDir()})
				inMemory := NewFetcher(st, Options{Cache: NewMemCache(1 << 30)})
				for row := range int64(len(rows)) {
					got, gerr := readStreamed(streamed, bad, row, 1<<20)
					want, werr := inMemory.Value(context.Background(), bad, "data", row)
					if gerr == nil && (werr != nil || !bytes.Equal(got, want)) {
						t.Fatalf("byte %d flipped: row %d served %d bytes; the decode in memory: %d bytes, %v", at, row, len(got), len(want), werr)
					}
				}
			}
		})
	}
}

// FuzzDeltaLengths: the lengths of a DELTA_LENGTH_BYTE_ARRAY run, found
// as a streamed page finds them (binaryPackedLen, then the lengths
// decoded from exactly those bytes), are those parquet-go's decoder of the
// whole run finds, and the values start where its values start.
func FuzzDeltaLengths(f *testing.F) {
	var enc delta.LengthByteArrayEncoding
	for _, vals := range [][]string{{"a", "bc", ""}, {strings.Repeat("x", 300)}, make([]string, 1000)} {
		var data []byte
		offs := []uint32{0}
		for _, v := range vals {
			data = append(data, v...)
			offs = append(offs, uint32(len(data)))
		}
		b, err := enc.EncodeByteArray(nil, data, offs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// parquet-go allocates the values a run claims: only runs that
		// claim few are given to it.
		const max = 1 << 16
		if _, err := binaryPackedLen(src, max); err != nil && strings.Contains(err.Error(), "claims") {
			return
		}
		want, wantOffs, werr := enc.DecodeByteArray(nil, src, nil)
		end, gerr := binaryPackedLen(src, max)
		var lengths []int32
		if gerr == nil {
			var bp delta.BinaryPackedEncoding
			lengths, gerr = bp.DecodeInt32(nil, src[:end])
		}
		if gerr == nil {
			total := int64(0)
			for _, n := range lengths {
				if n < 0 {
					gerr = errors.New("a negative length")
				}
				total += int64(n)
			}
			if gerr == nil && total > int64(len(src)-end) {
				gerr = errors.New("past the end")
			}
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("parquet-go: %v; streamed: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if len(lengths) != len(wantOffs)-1 {
			t.Fatalf("%d lengths, parquet-go %d", len(lengths), len(wantOffs)-1)
		}
		pos := end
		for i, n := range lengths {
			if !bytes.Equal(src[pos:pos+int(n)], want[wantOffs[i]:wantOffs[i+1]]) {
				t.Fatalf("value %d differs", i)
			}
			pos += int(n)
		}
	})
}

// Reads of pages that are not streamed cost what they did: a page whose
// compressed bytes stay within SpillAbove, and one declined once (its
// header past the first chunk), are read from storage once, however many
// of their values are read, never their header again for each read.
func TestPageStreamLooksOnce(t *testing.T) {
	root := t.TempDir()
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{8})
	rows := make([][]byte, 40)
	for i := range rows {
		rows[i] = make([]byte, 50<<10)
		_, _ = rng.Read(rows[i])
	}
	small := writeStreamFile(t, root, "small.parquet", rows, &parquet.Snappy, 1, false) // a 2 MiB page
	// A page whose header carries page statistics that repeat a 5 MiB
	// value: past the first chunk, so decoded in memory.
	big := [][]byte{make([]byte, 5<<20), []byte("b")}
	_, _ = rng.Read(big[0])
	path := filepath.Join(root, "stats.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[streamRow](f, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(1<<30))
	for i, r := range big {
		if _, err := w.Write([]streamRow{{ID: int64(i), Data: r}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	f.Close()
	withStats := FileRef{Path: "stats.parquet", Key: "stats.parquet", Size: info.Size(), ID: "1"}
	for _, tc := range []struct {
		name  string
		ref   FileRef
		rows  [][]byte
		spill int64
	}{
		{"page within SpillAbove", small, rows, 4 << 20},
		{"page declined", withStats, big, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &countedStore{Storage: st}
			p := NewFetcher(cs, Options{Cache: NewMemCache(64 << 20), SpillAbove: tc.spill, SpillDir: t.TempDir()})
			buf := make([]byte, 4096)
			for pass := range 3 {
				for i, want := range tc.rows {
					n, err := p.ValueAt(context.Background(), tc.ref, "data", int64(i), buf, 0)
					if err != nil || !bytes.Equal(buf[:n], want[:min(len(want), len(buf))]) {
						t.Fatalf("pass %d, row %d: %d bytes, %v", pass, i, n, err)
					}
				}
			}
			// Each byte of the file read at most once (the tail's first
			// guess may overlap what follows it): the page once, in one
			// read or its first chunk and the rest.
			if read := cs.bytes.Load(); read > tc.ref.Size+64<<10 {
				t.Fatalf("%d bytes read for 3 passes over a file of %d", read, tc.ref.Size)
			}
			if s := p.Stats(); s.PagesStreamed != 0 || s.PagesDecoded != 1 {
				t.Fatalf("%d pages streamed, %d decoded; want the page decoded once in memory", s.PagesStreamed, s.PagesDecoded)
			}
		})
	}
}

// A spill file that cannot be made (its directory gone, a full disk)
// costs only memory: the page is decoded in memory, and its reads give
// the true bytes.
func TestPageStreamNoSpillRoom(t *testing.T) {
	root := t.TempDir()
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	rows := streamRows(2 << 20)
	ref := writeStreamFile(t, root, "x.parquet", rows, &parquet.Snappy, 1, false)
	p := NewFetcher(st, Options{Cache: NewMemCache(1 << 20), SpillAbove: 256 << 10, SpillDir: filepath.Join(t.TempDir(), "gone")})
	for i, want := range rows {
		got, err := readStreamed(p, ref, int64(i), 1<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("row %d: %d bytes (want %d), %v", i, len(got), len(want), err)
		}
	}
	if s := p.Stats(); s.PagesStreamed != 0 || s.PagesDecoded == 0 {
		t.Fatalf("%d pages streamed, %d decoded: want the page decoded in memory", s.PagesStreamed, s.PagesDecoded)
	}
}
