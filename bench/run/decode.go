package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"
)

// decodeRate is the baseline for cold reads of large samples: parquet-go
// decoding the column in process, zero-copy, page by page, from the table's
// data files, in MB/s of values.
func decodeRate(table, column string) (float64, error) {
	files, err := filepath.Glob(filepath.Join(table, "*.parquet"))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("%s: no data files (%v)", table, err)
	}
	start := time.Now()
	var total int64
	for _, path := range files {
		n, err := decodeFile(path, column)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return float64(total) / time.Since(start).Seconds() / 1e6, nil
}

func decodeFile(path, column string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	leaf, ok := pf.Schema().Lookup(column)
	if !ok {
		return 0, fmt.Errorf("%s: no column %q", path, column)
	}
	var total int64
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			pg, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				pages.Close()
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			values := pg.Data()
			data, _ := values.ByteArray()
			total += int64(len(data))
			parquet.Release(pg)
		}
		pages.Close()
	}
	return total, nil
}

// tailRead is the least a mount reads of a data file's end to open it (its
// page.Fetcher's first read: footer and page index at once).
const tailRead = 64 << 10

// sampleBound is, over the table's data files, the most a cold read of one
// sample may cost: the file's largest page of column plus its tail read —
// the footer and page index, or tailRead bytes if they are smaller.
func sampleBound(table, column string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(table, "*.parquet"))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("%s: no data files (%v)", table, err)
	}
	var worst int64
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, err
		}
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		leaf, ok := pf.Schema().Lookup(column)
		if !ok {
			f.Close()
			return 0, fmt.Errorf("%s: no column %q", path, column)
		}
		var page int64
		indexAt := st.Size()
		for i, rg := range pf.RowGroups() {
			oi, err := rg.ColumnChunks()[leaf.ColumnIndex].OffsetIndex()
			if err != nil {
				f.Close()
				return 0, fmt.Errorf("%s: no offset index: %w", path, err)
			}
			for p := range oi.NumPages() {
				page = max(page, oi.CompressedPageSize(p))
			}
			for _, c := range pf.Metadata().RowGroups[i].Columns {
				if c.ColumnIndexOffset > 0 {
					indexAt = min(indexAt, c.ColumnIndexOffset)
				}
				if c.OffsetIndexOffset > 0 {
					indexAt = min(indexAt, c.OffsetIndexOffset)
				}
			}
		}
		f.Close()
		tail := min(st.Size(), max(st.Size()-indexAt, tailRead))
		worst = max(worst, page+tail)
	}
	return worst, nil
}
