package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// writeNpy writes a version 1.0 .npy file with the given header dict and
// record bytes, gzipped when the name ends in .gz.
func writeNpy(t *testing.T, path, dict string, data []byte) {
	t.Helper()
	hdr := dict
	// Pad so that the data starts at a multiple of 64, ending in '\n'.
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var buf bytes.Buffer
	buf.WriteString(npyMagic)
	buf.Write([]byte{1, 0})
	binary.Write(&buf, binary.LittleEndian, uint16(len(hdr)))
	buf.WriteString(hdr)
	buf.Write(data)
	out := buf.Bytes()
	if strings.HasSuffix(path, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(out)
		zw.Close()
		out = z.Bytes()
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func localStorage(t *testing.T, dir string) storage.Storage {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// importPath opens src and imports it into the table at dir.
func importPath(t *testing.T, src, dir string, opts writer.Options) (*writer.Result, error) {
	t.Helper()
	s, err := Open(context.Background(), src, Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return Import(context.Background(), localStorage(t, dir), s, opts)
}

// latestSnapshot reads the table's latest version with the snapshot package.
func latestSnapshot(t *testing.T, dir string) *snapshot.Snapshot {
	t.Helper()
	ctx := context.Background()
	tbl, err := snapshot.Open(ctx, localStorage(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readRows reads the live rows of the latest version straight from the
// Parquet files.
func readRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range latestSnapshot(t, dir).Files {
		out = append(out, readFileRows(t, filepath.Join(dir, f.Path))...)
	}
	return out
}

// readFileRows reads one Parquet file: column name -> int64, int32,
// float32, float64, bool or []byte.
func readFileRows(t *testing.T, path string) []map[string]any {
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
	for _, fl := range pf.Schema().Fields() {
		names = append(names, fl.Name())
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
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

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

// schemaString prints a schema as name:type,...
func schemaString(s *snapshot.StructType) string {
	var parts []string
	for _, f := range s.Fields {
		parts = append(parts, fmt.Sprintf("%s:%s", f.Name, f.Type))
	}
	return strings.Join(parts, ",")
}
