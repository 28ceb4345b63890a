package testkit

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// ModuleRoot is the repository root (where go.mod is).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Tables is the directory of the shared test tables (testdata/delta; what
// each holds: testdata/delta/MANIFEST.md and EXPECTED.json).
func Tables() string { return filepath.Join(ModuleRoot(), "testdata", "delta") }

// CopyTable copies the shared test table name into t.TempDir() and returns
// the copy's path (…/name), so that a test can damage or extend it without
// touching testdata. The copies are new files: their modification times
// are now, not the checkout's.
func CopyTable(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(Tables(), name))); err != nil {
		t.Fatalf("copying test table %s: %v", name, err)
	}
	return dst
}

// DirNames is the names in directory dir, sorted (os.ReadDir's order).
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
