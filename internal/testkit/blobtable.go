package testkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// BlobRow is a row of WriteBlobTable's data file.
type BlobRow struct {
	ID   int64  `parquet:"id"`
	Data []byte `parquet:"data"`
}

// BlobSchema is the schema of a table of BlobRows.
const BlobSchema = `{"type":"struct","fields":[` + blobFields + `]}`

const blobFields = `{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"data","type":"binary","nullable":true,"metadata":{}}`

// DeepSchema is BlobSchema with a third column, deep, a struct nested
// depth levels (a long at the bottom), which the data file does not hold
// (every row's deep is null): a schema of hostile size and depth.
func DeepSchema(depth int) string {
	return `{"type":"struct","fields":[` + blobFields + `,{"name":"deep","type":` + DeepType(depth) + `,"nullable":true,"metadata":{}}]}`
}

// DeepType is the type of DeepSchema's column deep: struct<a:struct<a:...
// long>>, depth levels.
func DeepType(depth int) string {
	const open, close = `{"type":"struct","fields":[{"name":"a","type":`, `,"nullable":true,"metadata":{}}]}`
	return strings.Repeat(open, depth) + `"long"` + strings.Repeat(close, depth)
}

// WriteBlobTable writes a Delta table at dir: version 0 with schema (a
// schema whose columns include BlobSchema's) adding one data file of
// rows, with its numRecords (Snappy-compressed, pages of about 1 MiB; a
// larger value is a page of its own).
func WriteBlobTable(dir, schema string, rows []BlobRow) error {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "part-00000.parquet"))
	if err != nil {
		return err
	}
	// As deltafs's writer writes binary columns: no page bounds (a value
	// of 64 MiB would be its own minimum and maximum, twice in the footer).
	w := parquet.NewGenericWriter[BlobRow](f, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(1<<20),
		parquet.SkipPageStatistics("data"), parquet.SkipPageBounds("data"))
	_, err = w.Write(rows)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err != nil {
		return err
	}
	info, err := os.Stat(f.Name())
	if err != nil {
		return err
	}
	s, _ := json.Marshal(schema)
	commit := fmt.Sprintf(`{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"b10b0000-0000-4000-8000-000000000001","format":{"provider":"parquet","options":{}},"schemaString":%s,"partitionColumns":[],"configuration":{},"createdTime":1700000000000}}
{"add":{"path":"part-00000.parquet","partitionValues":{},"size":%d,"modificationTime":1700000000000,"dataChange":true,"stats":"{\"numRecords\":%d}"}}
`, s, info.Size(), len(rows))
	return os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(commit), 0o644)
}
