package scan

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// scanFile scans one file of snap with every column, counting rows.
func scanFile(t *testing.T, snap *snapshot.Snapshot, f *snapshot.AddFile) (int, error) {
	t.Helper()
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = sc.File(t.Context(), f, func(int64, []any) error { n++; return nil })
	return n, err
}

// scanFileColumns is scanFile through FileColumns.
func scanFileColumns(t *testing.T, snap *snapshot.Snapshot, f *snapshot.AddFile) (int, error) {
	t.Helper()
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = sc.FileColumns(t.Context(), f, func(b *Batch) error { n += len(b.Rows); return nil })
	return n, err
}

// checkFileError checks that err is a *FileError naming the version and
// the file.
func checkFileError(t *testing.T, err error, snap *snapshot.Snapshot, f *snapshot.AddFile) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Version != snap.Version || fe.Path != f.Path {
		t.Fatalf("error %v (%T): want a *FileError of version %d, %s", err, err, snap.Version, f.Path)
	}
	if prefix := "version " + itoa(snap.Version) + ": " + f.Path + ": "; !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("error %q: want the prefix %q", err, prefix)
	}
}

func TestMissingDataFile(t *testing.T) {
	dir := testkit.CopyTable(t, "golden-dv-partitioned-with-checkpoint")
	snap := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	f := snap.Files[3]
	key, _ := snap.FileKey(f.Path)
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(key))); err != nil {
		t.Fatal(err)
	}
	_, err := scanFile(t, snap, f)
	checkFileError(t, err, snap, f)
	if !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("error %v: want storage.ErrNotExist", err)
	}
	// Other files still read; All stops at the missing one.
	if _, err := scanFile(t, snap, snap.Files[0]); err != nil {
		t.Errorf("another file: %v", err)
	}
	sc, _ := New(snap, nil)
	err = sc.All(t.Context(), func(*snapshot.AddFile, int64, []any) error { return nil })
	if !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("All: %v", err)
	}
	if _, err := FileRowCount(t.Context(), snap, f); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("FileRowCount: %v", err)
	}
}

// Truncated, empty and garbage data files fail with an error naming them.
func TestCorruptDataFile(t *testing.T) {
	dir := testkit.CopyTable(t, "dat-basic_append")
	snap := snaptest.Version(t, snaptest.OpenDir(t, dir), 0)
	f := snap.Files[0]
	key, _ := snap.FileKey(f.Path)
	path := filepath.Join(dir, filepath.FromSlash(key))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, len(orig))
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	footerless := append([]byte(nil), orig...)
	copy(footerless[len(footerless)-8:], "\x00\x00\x00\x00PAR1")
	for name, data := range map[string][]byte{
		"truncated": orig[:len(orig)/2],
		"empty":     {},
		"garbage":   garbage,
		"no footer": footerless,
		"magic":     append([]byte("PAR1"), garbage[4:]...),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, read := range []func(*testing.T, *snapshot.Snapshot, *snapshot.AddFile) (int, error){scanFile, scanFileColumns} {
			_, err := read(t, snap, f)
			if err == nil {
				t.Errorf("%s: no error", name)
				continue
			}
			checkFileError(t, err, snap, f)
			if errors.Is(err, storage.ErrNotExist) {
				t.Errorf("%s: %v reads as a missing file", name, err)
			}
		}
	}
}

// Bytes changed anywhere in data files (pages, footer, page index) give
// errors or wrong values, never a panic; FileColumns fails where
// Scan.File does, and gives the same rows otherwise.
func TestCorruptDataFileNoPanic(t *testing.T) {
	for _, table := range []string{"golden-table-with-columnmapping-mode-id", "deltars-table_with_column_mapping", "kernelrs-type-widening"} {
		dir := testkit.CopyTable(t, table)
		snap := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
		for _, f := range snap.Files {
			key, _ := snap.FileKey(f.Path)
			path := filepath.Join(dir, filepath.FromSlash(key))
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(len(orig)), 3))
			failures := 0
			for try := range 80 {
				data := append([]byte(nil), orig...)
				for range 1 + try%4 {
					data[4+rng.IntN(len(data)-12)] ^= byte(1 + rng.IntN(255))
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				n, err := scanFile(t, snap, f)
				if err != nil {
					failures++
					checkFileError(t, err, snap, f)
				}
				nc, cerr := scanFileColumns(t, snap, f)
				if cerr != nil {
					checkFileError(t, cerr, snap, f)
				}
				if (err == nil) != (cerr == nil) || n != nc {
					t.Errorf("%s %s corruption %d: Scan.File %d rows, %v; FileColumns %d rows, %v", table, f.Path, try, n, err, nc, cerr)
				}
			}
			t.Logf("%s %s: %d of 80 corruptions detected", table, f.Path, failures)
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var errStop = errors.New("stop")

// An error of the callback comes back as it is; a panic in it is not
// taken for one of parquet-go's.
func TestCallbackErrorsAndPanics(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "golden-basic-with-inserts-deletes-checkpoint")), -1)
	sc, _ := New(snap, nil)
	n := 0
	err := sc.All(t.Context(), func(*snapshot.AddFile, int64, []any) error {
		if n++; n == 3 {
			return errStop
		}
		return nil
	})
	if err != errStop || n != 3 {
		t.Errorf("err %v after %d rows, want errStop after 3", err, n)
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the callback's panic", p)
		}
	}()
	sc.All(t.Context(), func(*snapshot.AddFile, int64, []any) error { panic("boom") })
	t.Error("no panic")
}

func TestCanceledContext(t *testing.T) {
	snap := snaptest.Version(t, snaptest.OpenDir(t, filepath.Join(testdataDir, "golden-basic-with-vacuum-protocol-check-feature")), -1)
	sc, _ := New(snap, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := sc.All(ctx, func(*snapshot.AddFile, int64, []any) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	err = sc.FileColumns(ctx, snap.Files[0], func(*Batch) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("FileColumns: err %v, want context.Canceled", err)
	}
}

// A data file whose row count differs from the log's statistics is an
// error: it is not the file the log describes.
func TestRowCountMismatch(t *testing.T) {
	data, _ := rgFile(t, &parquet.Snappy)
	snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: data, numRecords: rgRows + 1})
	_, err := scanFile(t, snap, snap.Files[0])
	if err == nil || !strings.Contains(err.Error(), "has 2000 rows, its statistics in the log say 2001") {
		t.Errorf("err %v", err)
	}
	if _, cerr := scanFileColumns(t, snap, snap.Files[0]); cerr == nil || err == nil || cerr.Error() != err.Error() {
		t.Errorf("FileColumns: err %v", cerr)
	}
}
