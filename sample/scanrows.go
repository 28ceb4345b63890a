package sample

import (
	"context"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// ScanRows returns the Rows implementation backed by package scan: the same
// decoding (and JSON rendering, scan.AppendJSON) as `deltafs cat`.
func ScanRows(t *snapshot.Table) (Rows, error) { return scanRows{}, nil }

type scanRows struct{}

func (scanRows) Scan(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(row int64, values []any)) error {
	if len(columns) == 0 {
		// Only the live row indexes: the footer's row count less the
		// deletion vector, no column decoded.
		n, err := scan.FileRowCount(ctx, snap, f)
		if err != nil {
			return err
		}
		dv, err := snap.DeletedRows(ctx, f)
		if err != nil {
			return err
		}
		for row := int64(0); row < n; row++ {
			if dv != nil && dv.Contains(uint64(row)) {
				continue
			}
			fn(row, nil)
		}
		return ctx.Err()
	}
	s, err := scan.New(snap, columns)
	if err != nil {
		return err
	}
	return s.File(ctx, f, func(row int64, values []any) error {
		fn(row, values)
		return nil
	})
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
