package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage"
)

// nextID is max(col)+1 over the live files of s, or 0 for a table without
// rows. It uses the add actions' maxValues and reads the column itself only
// from files whose statistics lack it.
func nextID(ctx context.Context, st storage.Storage, s *state, col string) (int64, error) {
	next := int64(0)
	for _, f := range s.liveFiles() {
		m, ok, err := statsMax(f.Stats, col)
		if err != nil {
			return 0, fmt.Errorf("%s: stats: %w", f.Path, err)
		}
		if !ok {
			key, err := s.fileKey(f)
			if err != nil {
				return 0, err
			}
			if m, ok, err = scanMax(ctx, st, key, f.Size, col); err != nil {
				return 0, err
			}
		}
		if ok && m+1 > next {
			next = m + 1
		}
	}
	return next, nil
}

// statsMax reads maxValues[col] from a stats string. ok is false when the
// statistics do not say (and the file has rows in col).
func statsMax(stats, col string) (m int64, ok bool, err error) {
	if stats == "" {
		return 0, false, nil
	}
	var js struct {
		NumRecords *int64                 `json:"numRecords"`
		MaxValues  map[string]json.Number `json:"maxValues"`
		NullCount  map[string]json.Number `json:"nullCount"`
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if err := dec.Decode(&js); err != nil {
		// maxValues may hold nested objects for other columns; retry leniently.
		return statsMaxLenient(stats, col)
	}
	if v, found := js.MaxValues[col]; found {
		n, err := v.Int64()
		if err != nil {
			return 0, false, fmt.Errorf("maxValues.%s = %s: %w", col, v, err)
		}
		return n, true, nil
	}
	if js.NumRecords != nil && *js.NumRecords == 0 {
		return -1, true, nil
	}
	if nc, found := js.NullCount[col]; found && js.NumRecords != nil && nc.String() == fmt.Sprint(*js.NumRecords) {
		return -1, true, nil // all null
	}
	return 0, false, nil
}

func statsMaxLenient(stats, col string) (int64, bool, error) {
	var js struct {
		MaxValues map[string]json.RawMessage `json:"maxValues"`
	}
	if err := json.Unmarshal([]byte(stats), &js); err != nil {
		return 0, false, err
	}
	raw, found := js.MaxValues[col]
	if !found {
		return 0, false, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, false, fmt.Errorf("maxValues.%s = %s: %w", col, raw, err)
	}
	v, err := n.Int64()
	return v, err == nil, err
}

// scanMax reads the column col of a data file and returns its maximum.
func scanMax(ctx context.Context, st storage.Storage, key string, size int64, col string) (int64, bool, error) {
	pf, err := openParquet(ctx, st, key, size)
	if err != nil {
		return 0, false, err
	}
	leaf := pf.Root().Column(col)
	if leaf == nil {
		return 0, false, nil // column missing from the file: all null
	}
	idx := leaf.Index()
	m, found := int64(0), false
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[idx].Pages()
		for {
			pg, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				pages.Close()
				return 0, false, fmt.Errorf("%s: read %s: %w", key, col, err)
			}
			vals := make([]parquet.Value, pg.NumValues())
			n, _ := pg.Values().ReadValues(vals)
			for _, v := range vals[:n] {
				if v.IsNull() {
					continue
				}
				if x := v.Int64(); !found || x > m {
					m, found = x, true
				}
			}
			parquet.Release(pg)
		}
		pages.Close()
	}
	if !found {
		return -1, true, nil
	}
	return m, true, nil
}

// openParquet opens a data file through storage.
func openParquet(ctx context.Context, st storage.Storage, key string, size int64) (*parquet.File, error) {
	if size <= 0 {
		info, err := st.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		size = info.Size
	}
	pf, err := parquet.OpenFile(storage.ReaderAt(ctx, st, key), size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return pf, nil
}
