package sample

import (
	"context"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// ScanRows returns the Rows implementation backed by package scan: the same
// decoding (and JSON rendering, scan.AppendJSON) as `deltafs cat`.
func ScanRows(t *snapshot.Log) (Rows, error) { return scanRows{}, nil }

type scanRows struct{}

func (scanRows) Columns(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(b *scan.Batch) error) error {
	if columns == nil {
		columns = []string{} // only the live rows (nil would mean every column)
	}
	s, err := scan.New(snap, columns)
	if err != nil {
		return err
	}
	return s.FileColumns(ctx, f, fn)
}

func (scanRows) ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(row int64, json []byte)) error {
	s, err := scan.New(snap, nil)
	if err != nil {
		return err
	}
	var buf []byte
	return s.File(ctx, f, func(row int64, values []any) error {
		buf = s.AppendJSON(buf[:0], values)
		fn(row, buf)
		return nil
	})
}
