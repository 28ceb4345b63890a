// Package snaptest opens Delta tables in tests: a table on local disk,
// one of its versions, the live rows of its latest (for the tests of scan,
// writer and importer, which read tables through the log). It
// sits beside internal/testkit, which cannot import snapshot or storage
// (their own tests use testkit).
package snaptest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Local is the local directory dir as a storage.Storage.
func Local(t testing.TB, dir string) storage.Storage {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Open opens the table in st.
func Open(t testing.TB, st storage.Storage) *snapshot.Log {
	t.Helper()
	tbl, err := snapshot.Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// OpenDir opens the table at the local directory dir.
func OpenDir(t testing.TB, dir string) *snapshot.Log {
	t.Helper()
	return Open(t, Local(t, dir))
}

// Version is version v of tbl (-1: the latest).
func Version(t testing.TB, tbl *snapshot.Log, v int64) *snapshot.Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// LiveRows reads the live rows of the latest version of the table at dir
// straight from its Parquet files, in the snapshot's file order (deletion
// vectors are not applied: for tables written without them).
func LiveRows(t testing.TB, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range Version(t, OpenDir(t, dir), -1).Files {
		out = append(out, testkit.ParquetRows(t, filepath.Join(dir, f.Path))...)
	}
	return out
}
