package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// Broken copies of real tables: each damage makes the versions that need
// the damaged file fail with an error naming it, never a panic, and
// leaves the other versions readable with their expected contents.

// checkReadable checks that every listed version reads as EXPECTED says
// (files, and rows where the log has statistics).
func checkReadable(t *testing.T, tbl *Log, name string, versions ...int64) {
	t.Helper()
	e := loadExpected(t)[name]
	for _, v := range versions {
		s := mustSnapshot(t, tbl, v)
		ev := e.Versions[strconv.FormatInt(v, 10)]
		if len(s.Files) != ev.Files {
			t.Errorf("version %d: %d files, want %d", v, len(s.Files), ev.Files)
		}
		if n := s.NumRows(); ev.Rows != nil && n >= 0 && n != *ev.Rows {
			t.Errorf("version %d: %d rows, want %d", v, n, *ev.Rows)
		}
	}
}

func checkFails(t *testing.T, tbl *Log, target error, file string, versions ...int64) {
	t.Helper()
	for _, v := range versions {
		_, err := tbl.Snapshot(context.Background(), v)
		wantErr(t, err, target, "version "+strconv.FormatInt(v, 10)+": "+file+": ")
	}
}

func rangeOf(a, b int64) []int64 {
	var out []int64
	for v := a; v <= b; v++ {
		out = append(out, v)
	}
	return out
}

func TestCorruptTruncatedCommit(t *testing.T) {
	const name = "golden-basic-with-inserts-deletes-checkpoint"
	dir := testkit.CopyTable(t, name)
	p := logFilePath(dir, "00000000000000000012.json")
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := mustOpen(t, openLocal(t, dir)) // the latest is damaged, others are not
	checkFails(t, tbl, ErrCorrupt, "_delta_log/00000000000000000012.json", 12, 13)
	_, err := tbl.Snapshot(context.Background(), 13)
	wantErr(t, err, ErrCorrupt, "line ", "unexpected end of JSON input")
	checkReadable(t, tbl, name, rangeOf(0, 11)...)
}

func TestCorruptNonJSONCommit(t *testing.T) {
	const name = "golden-basic-with-inserts-deletes-checkpoint"
	for _, garbage := range []string{"\x00\x01binary\xff", "not json at all\n", `{"add":{"path":5}}` + "\n", `["an array"]` + "\n"} {
		dir := testkit.CopyTable(t, name)
		if err := os.WriteFile(logFilePath(dir, "00000000000000000005.json"), []byte(garbage), 0o644); err != nil {
			t.Fatal(err)
		}
		tbl := mustOpen(t, openLocal(t, dir))
		checkFails(t, tbl, ErrCorrupt, "_delta_log/00000000000000000005.json", rangeOf(5, 9)...)
		// The checkpoint at 10 does not need commit 5.
		checkReadable(t, tbl, name, append(rangeOf(0, 4), rangeOf(10, 13)...)...)
	}
}

func TestCorruptMissingCheckpointPart(t *testing.T) {
	const name = "golden-multi-part-checkpoint"
	dir := testkit.CopyTable(t, name)
	os.Remove(logFilePath(dir, "00000000000000000001.checkpoint.0000000002.0000000002.parquet"))
	// The protocol says to ignore an incomplete multi-part checkpoint:
	// version 1 is replayed from the commits.
	tbl := mustOpen(t, openLocal(t, dir))
	checkReadable(t, tbl, name, 0, 1)
	// Without commit 0 there is nothing to replay from.
	os.Remove(logFilePath(dir, "00000000000000000000.json"))
	_, err := Open(context.Background(), openLocal(t, dir))
	wantErr(t, err, ErrVersionNotFound, "00000000000000000001.checkpoint.0000000001.0000000002.parquet", "incomplete")
}

func TestCorruptMissingSidecar(t *testing.T) {
	const name = "golden-v2-checkpoint-parquet"
	dir := testkit.CopyTable(t, name)
	side := "_delta_log/_sidecars/00000000000000000002.checkpoint.0000000002.0000000002.33321cc1-9c55-4d1f-8511-fafe6d2e1133.parquet"
	os.Remove(filepath.Join(dir, side))
	tbl := mustOpen(t, openLocal(t, dir))
	_, err := tbl.Snapshot(context.Background(), 2)
	wantErr(t, err, storage.ErrNotExist, "version 2: "+side+": ")
	checkReadable(t, tbl, name, 0, 1)
}

func TestCorruptCheckpointParquet(t *testing.T) {
	const name = "dat-with_checkpoint"
	ckpt := "00000000000000000002.checkpoint.parquet"
	orig, err := os.ReadFile(filepath.Join(testdataDir, name, "_delta_log", ckpt))
	if err != nil {
		t.Fatal(err)
	}
	damages := map[string][]byte{
		"garbage":   []byte("this is not a parquet file at all, not even close"),
		"truncated": orig[:len(orig)/2],
		"empty":     {},
		"no footer": append(append([]byte{}, orig[:len(orig)-8]...), 0xff, 0xff, 0, 0, 'P', 'A', 'R', '1'),
	}
	// Bytes flipped all over the page data (the footer stays valid).
	for _, at := range []int{8, 40, 100, 400, 1000, 2000} {
		if at < len(orig)-200 {
			b := append([]byte{}, orig...)
			for i := at; i < at+16; i++ {
				b[i] ^= 0x5a
			}
			damages["flipped@"+strconv.Itoa(at)] = b
		}
	}
	for what, data := range damages {
		t.Run(what, func(t *testing.T) {
			dir := testkit.CopyTable(t, name)
			if err := os.WriteFile(logFilePath(dir, ckpt), data, 0o644); err != nil {
				t.Fatal(err)
			}
			tbl, err := Open(context.Background(), openLocal(t, dir))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for _, v := range []int64{2, 3} {
				s, err := tbl.Snapshot(context.Background(), v)
				if err == nil {
					// Flipped bytes may land where nothing is checked
					// (statistics text): the result must still be right.
					checkReadable(t, tbl, name, v)
					_ = s
					continue
				}
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, storage.ErrNotExist) {
					t.Errorf("version %d: %v is not ErrCorrupt", v, err)
				}
				wantErr(t, err, nil, "version "+strconv.Itoa(int(v))+": _delta_log/"+ckpt+": ")
			}
			checkReadable(t, tbl, name, 0, 1)
		})
	}
}

func TestCorruptDeletionVectorFile(t *testing.T) {
	const name = "deltars-table-with-dv-small"
	const dvFile = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
	ctx := context.Background()
	cases := map[string]struct {
		damage func(p string)
		target error
		text   string
	}{
		"missing":  {func(p string) { os.Remove(p) }, storage.ErrNotExist, ""},
		"checksum": {func(p string) { flipByte(t, p, 20) }, ErrCorrupt, "checksum"},
		"crc":      {func(p string) { flipByte(t, p, 38) }, ErrCorrupt, "checksum"},
		"size":     {func(p string) { flipByte(t, p, 4) }, ErrCorrupt, "stored size"},
		"version":  {func(p string) { flipByte(t, p, 0) }, ErrCorrupt, "file version"},
		"short":    {func(p string) { truncateFile(t, p, 20) }, nil, ""},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			dir := testkit.CopyTable(t, name)
			c.damage(filepath.Join(dir, dvFile))
			tbl := mustOpen(t, openLocal(t, dir))
			s := mustSnapshot(t, tbl, 1) // the snapshot itself does not read DVs
			if s.NumRows() != 8 {
				t.Fatalf("version 1: %d rows from the log, want 8", s.NumRows())
			}
			_, err := s.DeletedRows(ctx, s.Files[0])
			wantErr(t, err, c.target, "version 1: "+dvFile+": deletion vector of ", c.text)
			checkReadable(t, tbl, name, 0)
		})
	}
	// The intact table: rows 0 and 9? Whatever they are, 2 of 10.
	tbl := mustOpen(t, openLocal(t, filepath.Join(testdataDir, name)))
	s := mustSnapshot(t, tbl, 1)
	bm, err := s.DeletedRows(ctx, s.Files[0])
	if err != nil || bm.GetCardinality() != 2 {
		t.Fatalf("DeletedRows = %v, %v", bm, err)
	}
	if bm, err := mustSnapshot(t, tbl, 0).DeletedRows(ctx, mustSnapshot(t, tbl, 0).Files[0]); bm != nil || err != nil {
		t.Fatalf("version 0 has no DV, got %v, %v", bm, err)
	}
}

func TestVacuumedDataFile(t *testing.T) {
	const name = "golden-basic-with-inserts-deletes-checkpoint"
	dir := testkit.CopyTable(t, name)
	tbl0 := mustOpen(t, openLocal(t, dir))
	first := mustSnapshot(t, tbl0, 0).Files[0]
	key, err := mustSnapshot(t, tbl0, 0).FileKey(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, key)); err != nil {
		t.Fatal(err)
	}
	// The log still lists the file; reading it is the scan's business.
	tbl := mustOpen(t, openLocal(t, dir))
	checkReadable(t, tbl, name, rangeOf(0, 13)...)
	if mustSnapshot(t, tbl, 0).Files[0].Path != first.Path {
		t.Error("the vacuumed file is not listed at version 0")
	}
}

func TestCorruptGapInCommits(t *testing.T) {
	const name = "golden-basic-with-inserts-deletes-checkpoint"
	dir := testkit.CopyTable(t, name)
	os.Remove(logFilePath(dir, "00000000000000000003.json"))
	tbl := mustOpen(t, openLocal(t, dir))
	checkFails(t, tbl, ErrLogGap, "_delta_log/00000000000000000003.json", rangeOf(3, 9)...)
	checkReadable(t, tbl, name, append(rangeOf(0, 2), rangeOf(10, 13)...)...)
	vs, err := tbl.Versions(context.Background())
	if err != nil || vs[0].Version != 10 || len(vs) != 4 {
		t.Fatalf("Versions = %v, %v; want 10..13", vs, err)
	}
}

func TestCorruptMissingLog(t *testing.T) {
	dir := testkit.CopyTable(t, "dat-basic_append")
	os.RemoveAll(filepath.Join(dir, "_delta_log"))
	_, err := Open(context.Background(), openLocal(t, dir))
	wantErr(t, err, ErrNotDeltaTable, dir+": _delta_log/: not a Delta table")
}

func flipByte(t *testing.T, p string, at int) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncateFile(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}

// Damage anywhere in any Parquet checkpoint or sidecar of the shared
// tables gives an error or a result, never a panic (parquet-go panics are
// recovered into errors naming the file).
func TestCheckpointDamageNeverPanics(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "*", "_delta_log", "*.parquet"))
	sidecars, _ := filepath.Glob(filepath.Join(testdataDir, "*", "_delta_log", "_sidecars", "*.parquet"))
	files = append(files, sidecars...)
	if len(files) < 15 {
		t.Fatalf("found %d Parquet log files", len(files))
	}
	ctx := context.Background()
	reads, failures := 0, 0
	for _, p := range files {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		step := max(len(orig)/60, 1)
		for at := 0; at < len(orig); at += step {
			for _, mask := range []byte{0xff} {
				b := append([]byte{}, orig...)
				for i := at; i < min(at+4, len(b)); i++ {
					b[i] ^= mask
				}
				st := storagetest.NewMem()
				st.Set("x.parquet", b, f0())
				_, err := readCheckpointFile(ctx, st, "x.parquet", int64(len(b)), false)
				reads++
				if err != nil {
					failures++
				}
			}
		}
	}
	t.Logf("%d damaged reads, %d failed cleanly, the rest decoded", reads, failures)
	if failures == 0 {
		t.Error("no damage was detected at all")
	}
}

// Damaged sizes in a checkpoint's metadata do not make the reader
// allocate what they claim: the footer length and the row count are
// checked against the file size.
func TestCheckpointDamagedSizesBounded(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(testdataDir, "dat-with_checkpoint", "_delta_log", "00000000000000000002.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	hugeFooter := append([]byte{}, orig...)
	copy(hugeFooter[len(hugeFooter)-8:], []byte{0xf0, 0xff, 0xff, 0xff})
	ctx := context.Background()
	for what, b := range map[string][]byte{"footer length": hugeFooter} {
		st := storagetest.NewMem()
		st.Set("x.parquet", b, f0())
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_, err := readCheckpointFile(ctx, st, "x.parquet", int64(len(b)), false)
		runtime.ReadMemStats(&m1)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", what, err)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > 16<<20 {
			t.Errorf("%s: allocated %d MiB", what, a>>20)
		}
	}
	// A row group claiming more rows than the file has bytes.
	pf, err := openParquet(ctx, loadDirFile(t, orig), "x.parquet", int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	pf.size = 3 // as if the file were 3 bytes: its row groups claim more rows
	if _, err := readParquetCheckpoint(pf); !errors.Is(err, ErrCorrupt) {
		t.Errorf("row count beyond the file size: %v", err)
	}
}

func loadDirFile(t *testing.T, data []byte) *storagetest.Mem {
	m := storagetest.NewMem()
	m.Set("x.parquet", data, f0())
	return m
}
