package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
)

// Conformance against the shared tables of testdata/delta and their
// EXPECTED.json: for every version, live files, live rows and top-level
// columns; protocol refusals; checkpoint replay against commit replay.

const testdataDir = "../testdata/delta"

type expectedVersion struct {
	Rows             *int64   `json:"rows"`
	Files            int      `json:"files"`
	Columns          []string `json:"columns"`
	PartitionColumns []string `json:"partitionColumns"`
	ColumnMapping    *string  `json:"columnMapping"`
	Protocol         Protocol `json:"protocol"`
	FilesWithDV      int      `json:"files_with_dv"`
	CommitTimestamp  *int64   `json:"commitInfo_timestamp"`
	InCommitTS       *int64   `json:"inCommitTimestamp"`
	Operation        *string  `json:"operation"`
}

type expectedTable struct {
	Versions          map[string]expectedVersion `json:"versions"`
	Unreconstructable []int64                    `json:"unreconstructable_versions"`
	Checkpoints       map[string][]string        `json:"checkpoints"`
	Compacted         []string                   `json:"compacted"`
}

func loadExpected(t testing.TB) map[string]expectedTable {
	t.Helper()
	var out map[string]expectedTable
	testkit.Expected(t, &out)
	if len(out) != 28 {
		t.Fatalf("EXPECTED.json has %d tables, want 28", len(out))
	}
	return out
}

// versionList is the readable versions, in order.
func (e expectedTable) versionList() []int64 {
	return testkit.Readable(e.Versions, e.Unreconstructable)
}

// refusedTables must fail with an *UnsupportedFeatureError naming this.
var refusedTables = map[string]string{
	"golden-deltalog-invalid-protocol-version": "reader version 99",
	"deltars-simple_table_features":            `"blahabl"`,
	"deltars-spark-variant-checkpoint":         `"variantType-preview"`,
}

func openLocal(t testing.TB, dir string) storage.Storage {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// footerRows counts the rows of a data file from its Parquet footer (for
// tables whose log has no statistics).
func footerRows(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pf.NumRows()
}

// liveRows counts live rows: numRecords from the log, else the footer (the
// scan package's job at run time), less the deletion vector, which is
// loaded and checked for every file that has one.
func liveRows(t *testing.T, s *Snapshot, dir string) int64 {
	t.Helper()
	var n int64
	for _, f := range s.Files {
		rec := f.NumRecords
		if rec < 0 {
			key, err := s.FileKey(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			rec = footerRows(t, filepath.Join(dir, key))
		}
		bm, err := s.DeletedRows(context.Background(), f)
		if err != nil {
			t.Fatalf("version %d: %v", s.Version, err)
		}
		if bm != nil {
			rec -= int64(bm.GetCardinality())
		}
		n += rec
	}
	return n
}

func TestConformance(t *testing.T) {
	exp := loadExpected(t)
	names := make([]string, 0, len(exp))
	for n := range exp {
		names = append(names, n)
	}
	sort.Strings(names)
	tally := struct{ tables, versions, refused int }{}
	for _, name := range names {
		e := exp[name]
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(testdataDir, name)
			ctx := context.Background()
			want, refused := refusedTables[name]
			tbl, err := Open(ctx, openLocal(t, dir))
			if refused {
				var u *UnsupportedFeatureError
				if !errors.As(err, &u) {
					t.Fatalf("Open: got %v, want an *UnsupportedFeatureError", err)
				}
				if !containsStr(err.Error(), want) || !containsStr(err.Error(), "version ") {
					t.Fatalf("Open error %q does not name %s", err, want)
				}
				tally.refused++
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			vs := e.versionList()
			infos, err := tbl.Versions(ctx)
			if err != nil {
				t.Fatalf("Versions: %v", err)
			}
			if len(infos) != len(vs) || infos[0].Version != vs[0] || infos[len(infos)-1].Version != vs[len(vs)-1] {
				t.Fatalf("Versions: %d versions %v..., want %v", len(infos), infos[0].Version, vs)
			}
			for _, v := range vs {
				ev := e.Versions[strconv.FormatInt(v, 10)]
				s, err := tbl.Snapshot(ctx, v)
				if err != nil {
					t.Fatalf("Snapshot(%d): %v", v, err)
				}
				checkVersion(t, s, ev, dir)
				if ev.Operation != nil && s.CommitInfo.Operation != *ev.Operation {
					t.Errorf("version %d: commitInfo operation %q, want %q", v, s.CommitInfo.Operation, *ev.Operation)
				}
			}
			if !t.Failed() {
				tally.tables++
				tally.versions += len(vs)
			}
		})
	}
	t.Logf("conformance: %d tables (%d versions) exact, %d refused", tally.tables, tally.versions, tally.refused)
	// 143 versions in EXPECTED.json, 9 of them in the 3 refused tables.
	if tally.tables != 25 || tally.versions != 134 || tally.refused != 3 {
		t.Errorf("tally %d tables (%d versions) exact, %d refused; want 25 (134), 3", tally.tables, tally.versions, tally.refused)
	}
}

func checkVersion(t *testing.T, s *Snapshot, ev expectedVersion, dir string) {
	t.Helper()
	v := s.Version
	if len(s.Files) != ev.Files {
		t.Errorf("version %d: %d files, want %d", v, len(s.Files), ev.Files)
	}
	if !slices.Equal(s.Schema.Names(), ev.Columns) {
		t.Errorf("version %d: columns %v, want %v", v, s.Schema.Names(), ev.Columns)
	}
	if ev.PartitionColumns != nil && !slices.Equal(s.Metadata.PartitionColumns, ev.PartitionColumns) && !(len(ev.PartitionColumns) == 0 && len(s.Metadata.PartitionColumns) == 0) {
		t.Errorf("version %d: partition columns %v, want %v", v, s.Metadata.PartitionColumns, ev.PartitionColumns)
	}
	if s.Protocol.MinReaderVersion != ev.Protocol.MinReaderVersion || s.Protocol.MinWriterVersion != ev.Protocol.MinWriterVersion ||
		!slices.Equal(s.Protocol.ReaderFeatures, ev.Protocol.ReaderFeatures) {
		t.Errorf("version %d: protocol %v, want %v", v, s.Protocol.String(), ev.Protocol.String())
	}
	wantMode := "none"
	if ev.ColumnMapping != nil {
		wantMode = *ev.ColumnMapping
	}
	if s.ColumnMappingMode() != wantMode {
		t.Errorf("version %d: column mapping %q, want %q", v, s.ColumnMappingMode(), wantMode)
	}
	dvs := 0
	for i, f := range s.Files {
		if f.DeletionVector != nil {
			dvs++
		}
		if i > 0 && compareFiles(s.Files[i-1], f) >= 0 {
			t.Errorf("version %d: files not sorted by path at %d", v, i)
		}
	}
	if dvs != ev.FilesWithDV {
		t.Errorf("version %d: %d files with a DV, want %d", v, dvs, ev.FilesWithDV)
	}
	if ev.Rows == nil {
		return
	}
	if got := liveRows(t, s, dir); got != *ev.Rows {
		t.Errorf("version %d: %d live rows, want %d", v, got, *ev.Rows)
	}
	if n := s.NumRows(); n >= 0 && n != *ev.Rows {
		t.Errorf("version %d: NumRows %d, want %d", v, n, *ev.Rows)
	}
	if ev.CommitTimestamp != nil && s.CommitInfo.Timestamp != *ev.CommitTimestamp {
		t.Errorf("version %d: commitInfo.timestamp %d, want %d", v, s.CommitInfo.Timestamp, *ev.CommitTimestamp)
	}
}

func containsStr(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
