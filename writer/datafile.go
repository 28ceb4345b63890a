package writer

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/buildinfo"
	"github.com/deltafs/deltafs/storage"
)

// pageBufferSize is parquet-go's page buffer: a page is cut when its
// uncompressed values reach about this size. See the package doc.
const pageBufferSize = 64 << 10

// batchRows and batchBytes bound the rows handed to parquet-go at once. It
// cuts a page only between calls (and every 64 rows within one), so a batch
// of at most an eighth of a page keeps pages within ~1/8 of pageBufferSize:
// 128 rows of 784 bytes would otherwise make 100 KB pages.
const (
	batchRows  = 64
	batchBytes = pageBufferSize / 8
)

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
	pend   int64 // estimated value bytes in batch
}

func writerOptions(cols []column, schema *parquet.Schema) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		schema,
		parquet.Compression(&parquet.Snappy),
		parquet.PageBufferSize(pageBufferSize),
		parquet.CreatedBy("deltafs", buildinfo.Version(), ""),
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
	size := int64(0)
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
		size += valueSize(r[i])
	}
	return w.appendRow(pr, size)
}

// appendRow buffers one converted row of about size value bytes.
func (w *fileWriter) appendRow(pr parquet.Row, size int64) error {
	w.batch = append(w.batch, pr)
	w.rows++
	w.pend += size
	if len(w.batch) == batchRows || w.pend >= batchBytes {
		return w.flushBatch()
	}
	return nil
}

// size is the estimated value bytes written so far.
func (w *fileWriter) size() int64 { return w.values + w.pend }

func (w *fileWriter) flushBatch() error {
	if len(w.batch) == 0 {
		return nil
	}
	if _, err := w.pw.WriteRows(w.batch); err != nil {
		return fmt.Errorf("encode parquet: %w", err)
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	w.values += w.pend
	w.pend = 0
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
