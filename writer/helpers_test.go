package writer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

func local(t *testing.T, dir string) storage.Storage {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// latest opens the table with the snapshot package and returns its latest
// version.
func latest(t *testing.T, dir string) *snapshot.Snapshot {
	t.Helper()
	ctx := context.Background()
	tbl, err := snapshot.Open(ctx, local(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tableRows reads every live row of the latest version, in snapshot file
// order.
func tableRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range latest(t, dir).Files {
		out = append(out, testkit.ParquetRows(t, filepath.Join(dir, f.Path))...)
	}
	return out
}

// commitActions reads the actions of one commit file as generic JSON.
func commitActions(t *testing.T, dir string, version int64) []map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(logKey(version))))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var a map[string]map[string]any
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("version %d: %v: %s", version, err, sc.Text())
		}
		out = append(out, a)
	}
	return out
}

// actionsOf returns the bodies of the actions of one kind ("add", ...).
func actionsOf(acts []map[string]map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, a := range acts {
		if b, ok := a[kind]; ok {
			out = append(out, b)
		}
	}
	return out
}

func prim(name string) *snapshot.PrimitiveType { return &snapshot.PrimitiveType{Name: name} }

func schemaOf(fields ...snapshot.StructField) *snapshot.StructType {
	return &snapshot.StructType{Fields: fields}
}

func fieldOf(name, typ string, nullable bool) snapshot.StructField {
	return snapshot.StructField{Name: name, Type: prim(typ), Nullable: nullable}
}
