package snapshot

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/storagetest"
)

func logFilePath(dir string, name string) string { return filepath.Join(dir, "_delta_log", name) }

func mustOpen(t testing.TB, st storage.Storage, opts ...Options) *Log {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	tbl, err := OpenWithOptions(context.Background(), st, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tbl
}

func mustSnapshot(t testing.TB, tbl *Log, v int64) *Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatalf("Snapshot(%d): %v", v, err)
	}
	return s
}

// sameSnapshot compares what two snapshots say about their version.
func sameSnapshot(t *testing.T, what string, a, b *Snapshot) {
	t.Helper()
	if a.Version != b.Version {
		t.Fatalf("%s: versions %d and %d", what, a.Version, b.Version)
	}
	if len(a.Files) != len(b.Files) {
		t.Fatalf("%s: version %d: %d files vs %d", what, a.Version, len(a.Files), len(b.Files))
	}
	for i := range a.Files {
		fa, fb := a.Files[i], b.Files[i]
		if fa.Path != fb.Path || fa.DeletionVector.UniqueID() != fb.DeletionVector.UniqueID() || fa.Size != fb.Size ||
			fa.NumRecords != fb.NumRecords || fa.LiveRows() != fb.LiveRows() ||
			!maps.EqualFunc(fa.PartitionValues, fb.PartitionValues, equalStringPtr) {
			t.Fatalf("%s: version %d: file %d differs:\n%+v\n%+v", what, a.Version, i, *fa, *fb)
		}
	}
	if a.Protocol.String() != b.Protocol.String() || !slices.Equal(a.Protocol.WriterFeatures, b.Protocol.WriterFeatures) {
		t.Fatalf("%s: version %d: protocol %v vs %v", what, a.Version, a.Protocol.String(), b.Protocol.String())
	}
	ma, mb := a.Metadata, b.Metadata
	if ma.ID != mb.ID || ma.SchemaString != mb.SchemaString || !slices.Equal(ma.PartitionColumns, mb.PartitionColumns) ||
		!maps.Equal(ma.Configuration, mb.Configuration) || ma.Format.Provider != mb.Format.Provider {
		t.Fatalf("%s: version %d: metadata differs:\n%+v\n%+v", what, a.Version, ma, mb)
	}
	if a.CommitInfo.Operation != b.CommitInfo.Operation || !a.Timestamp.Equal(b.Timestamp) {
		t.Fatalf("%s: version %d: commit %q at %v vs %q at %v", what, a.Version, a.CommitInfo.Operation, a.Timestamp, b.CommitInfo.Operation, b.Timestamp)
	}
}

// loadDir loads a table directory into a storagetest.Mem (modification
// times kept).
func loadDir(t testing.TB, dir string) *storagetest.Mem {
	t.Helper()
	m := storagetest.NewMem()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		m.Set(filepath.ToSlash(rel), data, info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
