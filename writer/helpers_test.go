package writer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltafs/deltafs/snapshot"
)

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
