package testkit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// ParquetRows reads every row of the Parquet file at path with parquet-go's
// generic row API, as top-level column name -> value: int64, int32,
// float32, float64, bool, []byte (every other physical type), or nil for
// a null.
func ParquetRows(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	var out []map[string]any
	buf := make([]parquet.Row, 128)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				m := map[string]any{}
				for _, v := range r {
					m[names[v.Column()]] = goValue(v)
				}
				out = append(out, m)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		rows.Close()
	}
	return out
}

// goValue is a Parquet value as the Go value ParquetRows promises.
func goValue(v parquet.Value) any {
	switch {
	case v.IsNull():
		return nil
	case v.Kind() == parquet.Int64:
		return v.Int64()
	case v.Kind() == parquet.Int32:
		return v.Int32()
	case v.Kind() == parquet.Float:
		return v.Float()
	case v.Kind() == parquet.Double:
		return v.Double()
	case v.Kind() == parquet.Boolean:
		return v.Boolean()
	}
	return bytes.Clone(v.ByteArray())
}
