package writer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage"
)

// shiftIDs rewrites a data file this write produced with every value of
// column idCol increased by delta, under a new name. Only the id column
// changes; its statistics shift with it.
func shiftIDs(ctx context.Context, st storage.Storage, cols []column, opts []parquet.WriterOption, f dataFile, part, idCol int, delta int64, now func() int64) (dataFile, error) {
	pf, err := openParquet(ctx, st, f.key, f.size)
	if err != nil {
		return dataFile{}, fmt.Errorf("reread data file to renumber ids: %w", err)
	}
	fw := newFileWriter(cols, opts)
	buf := make([]parquet.Row, batchRows)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				size := int64(0)
				for i := range r {
					if r[i].Column() == cols[idCol].index && !r[i].IsNull() {
						r[i] = parquet.Int64Value(r[i].Int64()+delta).Level(r[i].RepetitionLevel(), r[i].DefinitionLevel(), r[i].Column())
					}
					size += 8
					if k := r[i].Kind(); k == parquet.ByteArray || k == parquet.FixedLenByteArray {
						size += int64(len(r[i].ByteArray()))
					}
				}
				// ReadRows reuses buf: keep a copy.
				if err := fw.appendRow(r.Clone(), size); err != nil {
					rows.Close()
					return dataFile{}, err
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				return dataFile{}, fmt.Errorf("reread %s: %w", f.key, err)
			}
		}
		rows.Close()
	}
	data, err := fw.finish()
	if err != nil {
		return dataFile{}, err
	}
	stats := append([]colStats(nil), f.stats...)
	if s := &stats[idCol]; s.has {
		s.minI += delta
		s.maxI += delta
	}
	return putDataFile(ctx, st, part, data, f.rows, stats, now)
}
