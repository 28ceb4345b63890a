package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// damage is one way a data file can be broken before a shard is listed.
type damage struct {
	name string
	// apply breaks file (a data file of dir, named as in the log).
	apply func(t *testing.T, dir, file string)
	// cause is what the log line must say.
	cause string
}

var dataFileDamages = []damage{
	{"deleted", func(t *testing.T, dir, file string) {
		must(t, os.Remove(filepath.Join(dir, file)))
	}, "missing from storage"},
	{"truncated", func(t *testing.T, dir, file string) {
		p := filepath.Join(dir, file)
		fi, err := os.Stat(p)
		must(t, err)
		must(t, os.Truncate(p, fi.Size()/2))
	}, "bytes, the store holds"},
	{"crc", func(t *testing.T, dir, file string) {
		// Flip one byte inside the pixels column's first page: the page
		// checksum (parquet-go writes one) must catch it.
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		must(t, err)
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		must(t, err)
		col := pf.Root().Column("pixels").Index()
		md := pf.Metadata().RowGroups[0].Columns[col].MetaData
		off := md.DataPageOffset + md.TotalCompressedSize/2
		b[off] ^= 0x40
		must(t, os.WriteFile(p, b, 0o644))
	}, "checksum mismatch"},
	{"count", func(t *testing.T, dir, file string) {
		// The log claims far more rows than the file holds.
		p := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0))
		b, err := os.ReadFile(p)
		must(t, err)
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.Contains(l, `"path":"`+file+`"`) {
				lines[i] = strings.Replace(l, `\"numRecords\":100`, `\"numRecords\":30000000`, 1)
			}
		}
		must(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644))
	}, "30000000"},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hashShard maps every sample path under a shard directory to its bytes'
// hash, failing the test on any read error.
func hashShard(t *testing.T, sd string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, p := range samplesUnder(t, sd) {
		b, err := os.ReadFile(filepath.Join(sd, p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = sha256.Sum256(b)
	}
	return out
}

// TestMountFailClosed: a data file that cannot be indexed — deleted
// before its shard is listed, truncated, a page that fails its checksum,
// a row count the log gets wrong — fails the whole shard (the listing,
// the sample list and every name in it give EIO) with an error log line
// naming the table, the version, the file and the cause; never empty
// placeholder files, never a smaller listing. --skip-unreadable lists
// exactly the other files' samples, byte-identical to an undamaged mount,
// with one warning naming the file. Each sample mode: bytes, JSON rows,
// raw pixels as images in class folders.
func TestMountFailClosed(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)[:300]
	modes := []struct {
		name  string
		flags []string
	}{
		{"bytes", nil},
		{"json", []string{"--data-column", "-"}},
		{"images", []string{"--image", "28x28", "--class-column", "label"}},
	}
	for _, mode := range modes {
		// The undamaged table, for the bytes every readable sample must have.
		clean := newDeltaTable(t, filepath.Join(t.TempDir(), "clean"))
		_, paths := clean.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
		ref := mounttest.Start(t, bin, clean.dir, append([]string{"--cache-dir", "none"}, mode.flags...)...)
		want := hashShard(t, filepath.Join(ref.Dir, "version", "0", "shard", "0"))
		if len(want) != 300 {
			t.Fatalf("%s: %d samples in the undamaged table", mode.name, len(want))
		}
		// The samples of the damaged file, by their position in the
		// undamaged shard (files in append order, 100 rows each).
		byFile := map[string]bool{}
		ids := digits[100:200]
		for _, d := range ids {
			byFile[fmt.Sprint(d.ID)] = true
		}
		for _, dmg := range dataFileDamages {
			if mode.name == "images" && dmg.name == "crc" {
				// In image mode the index reads no pixels: the page fails
				// when its samples are read (covered below).
				continue
			}
			t.Run(mode.name+"/"+dmg.name, func(t *testing.T) {
				tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
				tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
				dmg.apply(t, tbl.dir, paths[1])
				m := mounttest.Start(t, bin, tbl.dir, append([]string{"--cache-dir", "none"}, mode.flags...)...)
				sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
				if _, err := os.ReadDir(sd); !errors.Is(err, syscall.EIO) {
					t.Fatalf("listing the shard: %v, want EIO", err)
				}
				for _, name := range []string{"_samples.tsv", "1.bin", "1.json", "7"} {
					if _, err := os.Stat(filepath.Join(sd, name)); !errors.Is(err, syscall.EIO) {
						t.Fatalf("%s: %v, want EIO", name, err)
					}
				}
				waitLog(t, m, 5*time.Second, "ERROR", tbl.dir+" version 0: data file "+paths[1], dmg.cause)

				// Opt-in: the readable part, exactly.
				s := mounttest.Start(t, bin, tbl.dir, append([]string{"--cache-dir", "none", "--skip-unreadable"}, mode.flags...)...)
				got := hashShard(t, filepath.Join(s.Dir, "version", "0", "shard", "0"))
				if len(got) != 200 {
					t.Fatalf("--skip-unreadable: %d samples, want the 200 of the readable files", len(got))
				}
				for p, h := range got {
					if want[p] != h {
						t.Fatalf("--skip-unreadable: %s differs from the undamaged table", p)
					}
					stem := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
					if byFile[stem] {
						t.Fatalf("--skip-unreadable lists %s of the unreadable file", p)
					}
				}
				waitLog(t, s, 5*time.Second, "WARN", "--skip-unreadable", "file="+paths[1])
			})
		}
	}
}

// TestMountFailClosedPages: in image mode the index reads no pixels, so a
// damaged pixel page is found when its samples are read: each read gives
// the undamaged table's bytes or EIO, never other bytes, and EIO only for
// samples of that page.
func TestMountFailClosedPages(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)[:300]
	clean := newDeltaTable(t, filepath.Join(t.TempDir(), "clean"))
	_, paths := clean.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
	flags := []string{"--cache-dir", "none", "--image", "28x28", "--class-column", "label"}
	ref := mounttest.Start(t, bin, clean.dir, flags...)
	want := hashShard(t, filepath.Join(ref.Dir, "version", "0", "shard", "0"))

	tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 100))
	dataFileDamages[2].apply(t, tbl.dir, paths[1])
	m := mounttest.Start(t, bin, tbl.dir, flags...)
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	names := samplesUnder(t, sd)
	sort.Strings(names)
	if len(names) != 300 {
		t.Fatalf("%d samples listed, want 300", len(names))
	}
	eio := 0
	for _, p := range names {
		b, err := os.ReadFile(filepath.Join(sd, p))
		switch {
		case err == nil && sha256.Sum256(b) == want[p]:
		case errors.Is(err, syscall.EIO):
			eio++
		default:
			t.Fatalf("%s: %v, or bytes other than the table's", p, err)
		}
	}
	if eio == 0 || eio > 100 {
		t.Fatalf("%d samples failed, want some of the damaged file's 100", eio)
	}
	waitLog(t, m, 5*time.Second, "ERROR", "data file "+paths[1], "checksum mismatch")
}

// TestMountFailClosedDeletionVectors: a deletion vector that is missing or
// damaged fails the shard of its data file (a DV-less read would serve
// deleted rows).
func TestMountFailClosedDeletionVectors(t *testing.T) {
	bin := mounttest.Binary(t)
	const dv = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
	for _, tc := range []struct {
		name  string
		apply func(t *testing.T, p string)
		cause string
	}{
		{"missing", func(t *testing.T, p string) { must(t, os.Remove(p)) }, "deletion vector"},
		{"corrupt", func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)-6] ^= 0xff
			must(t, os.WriteFile(p, b, 0o644))
		}, "deletion vector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testkit.CopyTable(t, "deltars-table-with-dv-small")
			tc.apply(t, filepath.Join(dir, dv))
			m := mounttest.Start(t, bin, dir, "--cache-dir", "none")
			sd := filepath.Join(m.Dir, "version", "1", "shard", "0")
			if _, err := os.ReadDir(sd); !errors.Is(err, syscall.EIO) {
				t.Fatalf("listing version 1: %v, want EIO", err)
			}
			waitLog(t, m, 5*time.Second, "ERROR", dir+" version 1", tc.cause)
			// Version 0 has no deletion vector: it serves.
			if n := len(samplesUnder(t, filepath.Join(m.Dir, "version", "0", "shard", "0"))); n != 10 {
				t.Fatalf("version 0: %d samples, want 10", n)
			}
		})
	}
}

// writeDigitsFile writes rows as deltaTable.commit does (same writer, same
// options) and returns the file's bytes.
func writeDigitsFile(t *testing.T, rows []testkit.Digit) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[testkit.Digit](&buf, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(64<<10))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	must(t, w.Close())
	return buf.Bytes()
}

// TestMountReplacedDataFile: a data file replaced by another of the same
// name and size (different pixels) is read anew by the next mount: the
// disk cache keys every data file by its store identity (here size and
// modification time), so the old file's cached pages and indexes are never
// served for the new one.
func TestMountReplacedDataFile(t *testing.T) {
	bin := mounttest.Binary(t)
	rows := func(v byte) []testkit.Digit {
		out := make([]testkit.Digit, 50)
		for i := range out {
			out[i] = testkit.Digit{ID: int64(i), Label: int32(i % 10), Pixels: bytes.Repeat([]byte{v}, 784)}
		}
		return out
	}
	tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	_, paths := tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, [][]testkit.Digit{rows(10)})
	data := filepath.Join(tbl.dir, paths[0])
	old, err := os.ReadFile(data)
	must(t, err)
	// Another file of the same size: pixels of another value (the sizes of
	// the encoded pages, checksums and statistics may vary: try values).
	var repl []byte
	var v byte
	for v = 200; v < 255; v++ {
		if b := writeDigitsFile(t, rows(v)); len(b) == len(old) && !bytes.Equal(b, old) {
			repl = b
			break
		}
	}
	if repl == nil {
		t.Fatal("no replacement of the same size")
	}
	cache := t.TempDir()
	flags := []string{"--image", "28x28", "--cache-dir", cache}
	m := mounttest.Start(t, bin, tbl.dir, flags...)
	before := hashShard(t, filepath.Join(m.Dir, "version", "0", "shard", "0"))
	must(t, m.Stop())

	must(t, os.WriteFile(data, repl, 0o644))
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(data, later, later))

	m2 := mounttest.Start(t, bin, tbl.dir, flags...)
	sd := filepath.Join(m2.Dir, "version", "0", "shard", "0")
	after := hashShard(t, sd)
	if len(after) != 50 || len(before) != 50 {
		t.Fatalf("%d and %d samples", len(before), len(after))
	}
	for p, h := range after {
		if h == before[p] {
			t.Fatalf("%s: the replaced file's sample has the old file's bytes (served from the cache)", p)
		}
	}
	// And they are the new file's pixels.
	b, err := os.ReadFile(filepath.Join(sd, "7.png"))
	must(t, err)
	ref := mounttest.Start(t, bin, tbl.dir, "--image", "28x28", "--cache-dir", "none")
	want, err := os.ReadFile(filepath.Join(ref.Dir, "version", "0", "shard", "0", "7.png"))
	must(t, err)
	if !bytes.Equal(b, want) {
		t.Fatal("the replaced file's sample differs from an uncached mount's")
	}
}
