package pqcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// realFiles are every Parquet file of the test tables: data files,
// checkpoints and sidecars written by Spark, Databricks, delta-rs and
// parquet-go (deltafs import).
func realFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../../testdata/delta", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return err
	})
	if err != nil || len(out) < 300 {
		t.Fatalf("found %d Parquet files: %v", len(out), err)
	}
	return out
}

// TestRealFilesPass: every real file passes every check — its tail read
// with ReadTail, each column chunk staged whole, each page an offset index
// locates staged alone (with its dictionary) — and parquet-go decodes
// every page from the staged bytes alone.
func TestRealFilesPass(t *testing.T) {
	pages := 0
	for _, p := range realFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(data)
		tail, off, f, err := ReadTail(r, int64(len(data)))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if _, err := Tail(tail, off, int64(len(data))); err != nil {
			t.Errorf("%s: the tail again: %v", p, err)
		}
		s := &Staged{}
		s.Add(off, tail)
		pf, err := parquet.OpenFile(s, int64(len(data)), parquet.SkipMagicBytes(true), parquet.SkipBloomFilters(true))
		if err != nil {
			t.Errorf("%s: parquet-go on the checked tail: %v", p, err)
			continue
		}
		for i, rg := range pf.RowGroups() {
			for j, cc := range rg.ColumnChunks() {
				fcc := cc.(*parquet.FileColumnChunk)
				st, err := f.StageChunk(r, i, j)
				if err != nil {
					t.Errorf("%s: row group %d column %s: %v", p, i, f.Column(j), err)
					continue
				}
				pages += decodeAll(t, p, fcc.PagesFrom(st), -1)
				oi, err := fcc.OffsetIndex()
				if err != nil {
					continue
				}
				for k := 0; k < oi.NumPages(); k++ {
					page := data[oi.Offset(k) : oi.Offset(k)+oi.CompressedPageSize(k)]
					st, err := f.StagePage(r, i, j, oi.Offset(k), page, oi.Offset(0))
					if err != nil {
						t.Errorf("%s: row group %d column %s page %d: %v", p, i, f.Column(j), k, err)
						continue
					}
					fp := fcc.PagesFrom(st)
					if err := fp.SeekToRow(oi.FirstRowIndex(k)); err != nil {
						t.Errorf("%s: seek: %v", p, err)
					}
					decodeAll(t, p, fp, 1)
				}
			}
		}
	}
	t.Logf("%d pages decoded", pages)
}

// decodeAll reads up to n pages (-1: all) and their values.
func decodeAll(t *testing.T, file string, pages parquet.Pages, n int) int {
	t.Helper()
	defer pages.Close()
	buf := make([]parquet.Value, 512)
	k := 0
	for ; k != n; k++ {
		pg, err := pages.ReadPage()
		if err != nil {
			if err.Error() != "EOF" {
				t.Errorf("%s: %v", file, err)
			}
			break
		}
		r := pg.Values()
		for {
			m, err := r.ReadValues(buf)
			if err != nil || m == 0 {
				break
			}
		}
		parquet.Release(pg)
	}
	return k
}
