package sample

import (
	"context"

	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// ScanRows returns the Rows implementation backed by package scan: the same
// decoding (and JSON rendering, scan.AppendJSON) as `deltafs cat`. Given
// to New with a page.Fetcher, its scans open data files from the fetcher's
// tails (page.Fetcher.ScanTail), so that the index build and the reads share
// one read of each file's tail.
func ScanRows(t *snapshot.Log) (Rows, error) { return scanRows{}, nil }

type scanRows struct {
	tails *page.Fetcher // nil: the scans read tails themselves
}

// options are the scan options for data file f of snap.
func (r scanRows) options(f *snapshot.AddFile) scan.Options {
	if r.tails == nil {
		return scan.Options{}
	}
	return scan.Options{Tail: func(ctx context.Context, key string, size int64) ([]byte, int64, error) {
		return r.tails.ScanTail(ctx, page.FileRef{Path: f.Path, Key: key, Size: f.Size}, size)
	}}
}

func (r scanRows) Columns(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(b *scan.Batch) error) error {
	if columns == nil {
		columns = []string{} // only the live rows (nil would mean every column)
	}
	s, err := scan.NewWithOptions(snap, columns, r.options(f))
	if err != nil {
		return err
	}
	return s.FileColumns(ctx, f, fn)
}

func (r scanRows) ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(row int64, json []byte)) error {
	s, err := scan.NewWithOptions(snap, nil, r.options(f))
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
