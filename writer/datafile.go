package writer

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage"
)

// pageBufferSize is parquet-go's page buffer: a page is cut when its
// uncompressed values reach about this size. See the package doc.
const pageBufferSize = 64 << 10

// batchRows is how many rows are handed to parquet-go at once.
const batchRows = 256

// dataFile is one data file written by this package, with what its add
// action needs.
type dataFile struct {
	key     string
	size    int64
	modTime int64 // ms
	rows    int64
	stats   []colStats
}

// fileWriter encodes rows into one Parquet file in memory.
type fileWriter struct {
	cols   []column
	buf    bytes.Buffer
	pw     *parquet.Writer
	batch  []parquet.Row
	stats  []colStats
	rows   int64
	values int64 // estimated value bytes, for MaxFileBytes
}

func writerOptions(cols []column, schema *parquet.Schema) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		schema,
		parquet.Compression(&parquet.Snappy),
		parquet.PageBufferSize(pageBufferSize),
		parquet.CreatedBy("deltafs", Version(), ""),
	}
	for _, c := range cols {
		if c.kind == kBinary {
			opts = append(opts, parquet.SkipPageStatistics(c.name), parquet.SkipPageBounds(c.name))
		}
	}
	return opts
}

func newFileWriter(cols []column, opts []parquet.WriterOption) *fileWriter {
	w := &fileWriter{cols: cols, stats: make([]colStats, len(cols))}
	w.pw = parquet.NewWriter(&w.buf, opts...)
	return w
}

// add converts and buffers one row.
func (w *fileWriter) add(r Row) error {
	if len(r) != len(w.cols) {
		return fmt.Errorf("row has %d values, the schema %d fields", len(r), len(w.cols))
	}
	pr := make(parquet.Row, len(w.cols))
	for i := range w.cols {
		c := &w.cols[i]
		v, err := c.toValue(r[i], &w.stats[i])
		if err != nil {
			return err
		}
		def := 0
		if c.nullable && r[i] != nil {
			def = 1
		}
		pr[i] = v.Level(0, def, c.index)
		w.values += valueSize(r[i])
	}
	w.batch = append(w.batch, pr)
	w.rows++
	if len(w.batch) == batchRows {
		return w.flushBatch()
	}
	return nil
}

func (w *fileWriter) flushBatch() error {
	if len(w.batch) == 0 {
		return nil
	}
	if _, err := w.pw.WriteRows(w.batch); err != nil {
		return fmt.Errorf("encode parquet: %w", err)
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	return nil
}

// finish closes the Parquet file and returns its bytes.
func (w *fileWriter) finish() ([]byte, error) {
	if err := w.flushBatch(); err != nil {
		return nil, err
	}
	if err := w.pw.Close(); err != nil {
		return nil, fmt.Errorf("encode parquet: %w", err)
	}
	return w.buf.Bytes(), nil
}

// newDataFileKey names a data file at the table root, as Spark does.
func newDataFileKey(part int) string {
	return fmt.Sprintf("part-%05d-%s-c000.snappy.parquet", part, uuid.NewString())
}

// putDataFile stores a finished data file under a fresh name.
func putDataFile(ctx context.Context, st storage.Storage, part int, data []byte, rows int64, stats []colStats, now func() int64) (dataFile, error) {
	key := newDataFileKey(part)
	if err := st.Put(ctx, key, data, true); err != nil {
		return dataFile{}, fmt.Errorf("write data file: %w", err)
	}
	return dataFile{key: key, size: int64(len(data)), modTime: now(), rows: rows, stats: stats}, nil
}
