package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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

// Expected decodes testdata/delta/EXPECTED.json, what each shared table
// holds (per table: its versions with their rows, files and commit info,
// the versions that cannot be reconstructed, checkpoints, checks), into v:
// a pointer to a map from table name to the caller's view of a table.
func Expected(t testing.TB, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Tables(), "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("EXPECTED.json: %v", err)
	}
}

// Readable is the versions of a table in EXPECTED.json (the keys of its
// "versions") less its "unreconstructable_versions", in order.
func Readable[V any](versions map[string]V, unreconstructable []int64) []int64 {
	var vs []int64
	for k := range versions {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			panic("testkit: EXPECTED.json has version " + strconv.Quote(k))
		}
		if !slices.Contains(unreconstructable, v) {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}
