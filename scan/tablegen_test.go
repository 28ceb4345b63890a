package scan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
)

// Generated Delta tables: Parquet files written by parquet-go plus a
// one-commit log, for tests of shapes the shared tables lack.

// genFile is one data file of a generated table.
type genFile struct {
	path       string
	data       []byte
	partition  map[string]*string
	numRecords int64          // -1: no stats
	dv         map[string]any // the add's deletionVector descriptor, if any
}

// genProtocol enables the reader features generated tables may use.
const genProtocol = `{"minReaderVersion":3,"minWriterVersion":7,` +
	`"readerFeatures":["columnMapping","timestampNtz","typeWidening","deletionVectors"],` +
	`"writerFeatures":["columnMapping","timestampNtz","typeWidening","deletionVectors"]}`

// writeTable writes a Delta table with one commit into dir and opens its
// snapshot.
func writeTable(t testing.TB, dir, schemaJSON string, partitionCols []string, config map[string]string, files ...genFile) *snapshot.Snapshot {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if partitionCols == nil {
		partitionCols = []string{}
	}
	var log bytes.Buffer
	log.WriteString(`{"protocol":` + genProtocol + "}\n")
	md, _ := json.Marshal(map[string]any{"metaData": map[string]any{
		"id": "00000000-0000-0000-0000-000000000001", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": schemaJSON, "partitionColumns": partitionCols, "configuration": config, "createdTime": 1,
	}})
	log.Write(md)
	log.WriteByte('\n')
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
		pv := f.partition
		if pv == nil {
			pv = map[string]*string{}
		}
		add := map[string]any{"path": f.path, "partitionValues": pv, "size": len(f.data), "modificationTime": 1, "dataChange": true}
		if f.dv != nil {
			add["deletionVector"] = f.dv
		}
		if f.numRecords >= 0 {
			add["stats"] = `{"numRecords":` + itoa(f.numRecords) + `}`
		}
		b, _ := json.Marshal(map[string]any{"add": add})
		log.Write(b)
		log.WriteByte('\n')
	}
	log.WriteString(`{"commitInfo":{"timestamp":1,"operation":"WRITE"}}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return snaptest.Version(t, snaptest.OpenDir(t, dir), 0)
}

// writeParquet writes rows (values with their levels, in leaf order) with
// schema.
func writeParquet(t testing.TB, schema *parquet.Schema, rows []parquet.Row, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, append([]parquet.WriterOption{schema}, opts...)...)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// schemaJSON builds a Delta schema string from "name:type" fields whose
// type is a primitive type name, or a JSON type literal.
func schemaJSON(fields ...string) string {
	var parts []string
	for _, f := range fields {
		name, typ, _ := strings.Cut(f, ":")
		if !strings.HasPrefix(typ, "{") {
			typ = `"` + typ + `"`
		}
		parts = append(parts, `{"name":"`+name+`","type":`+typ+`,"nullable":true,"metadata":{}}`)
	}
	return `{"type":"struct","fields":[` + strings.Join(parts, ",") + `]}`
}

// lv is a Parquet value at levels (repetition, definition) of leaf column.
func lv(v parquet.Value, rep, def, column int) parquet.Value { return v.Level(rep, def, column) }
