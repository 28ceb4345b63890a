package writer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

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

// readFile reads every row of a Parquet data file as column name -> value
// (int64, int32, float32, float64, bool, []byte, or nil).
func readFile(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	var out []map[string]any
	buf := make([]parquet.Row, 64)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				m := map[string]any{}
				for _, v := range r {
					name := names[v.Column()]
					switch {
					case v.IsNull():
						m[name] = nil
					case v.Kind() == parquet.Int64:
						m[name] = v.Int64()
					case v.Kind() == parquet.Int32:
						m[name] = v.Int32()
					case v.Kind() == parquet.Float:
						m[name] = v.Float()
					case v.Kind() == parquet.Double:
						m[name] = v.Double()
					case v.Kind() == parquet.Boolean:
						m[name] = v.Boolean()
					default:
						m[name] = bytes.Clone(v.ByteArray())
					}
				}
				out = append(out, m)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

// tableRows reads every live row of the latest version, in snapshot file
// order.
func tableRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range latest(t, dir).Files {
		out = append(out, readFile(t, filepath.Join(dir, f.Path))...)
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
