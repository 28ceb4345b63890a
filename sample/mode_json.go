package sample

import (
	"context"
	"fmt"
	"strconv"

	"github.com/deltafs/deltafs/snapshot"
)

// jsonMode: without a data column, a sample is its row as JSON, exactly
// what `deltafs cat` prints for it (scan.AppendJSON) plus "\n". A file's
// rows are rendered once, when it is indexed (which measures them), and
// kept in the BlobCache under fileSamples.jsonKey; reads take their row
// from that rendering, rendering the file again when it was evicted. The
// rendering depends on the schema, so the keys of a file's metadata and
// samples carry the schema's identity (Version.schemaID).
type jsonMode struct{}

func (jsonMode) identity() string { return "m0" }
func (jsonMode) describe() string { return "data=<row as JSON>" }

func (jsonMode) columns() []*column { return nil }

// findsRows: rendering finds the live rows, so a file is scanned for
// them only when ids or classes are read too.
func (jsonMode) findsRows() bool { return true }

func (jsonMode) ext() string { return ".json" }
func (jsonMode) size() int64 { return -1 }

func (jsonMode) fileKey(v *Version) string { return "\x00" + v.schemaID() }

func (jsonMode) sampleKey(v *Version, row int64) (string, string) {
	return "json:" + v.schemaID(), rowUnit(row)
}

// index renders the file's live rows and measures them, and keeps the
// rendering cached: reads will want it soon.
func (jsonMode) index(ctx context.Context, b *fileBuild) error {
	v, f, fs := b.v, b.f, b.fs
	fs.jsonKey = CacheKey{Kind: "json", File: f.Path, Version: fs.ref.identity(), Column: v.schemaID(), Unit: f.DeletionVector.UniqueID()}
	blob, jrows, err := v.renderJSON(ctx, f)
	if err != nil {
		return err
	}
	if !b.scanned {
		for _, row := range jrows {
			b.addRow(row)
			b.ids.n++
		}
	} else if len(jrows) != len(b.rows) {
		return fmt.Errorf("scan gave %d rows, JSON scan %d", len(b.rows), len(jrows))
	}
	fs.sizes = make([]uint32, len(jrows))
	for j := range jrows {
		fs.sizes[j] = uint32(len(blobValue(blob, j)))
	}
	_, _ = v.s.opts.Cache.Get(ctx, fs.jsonKey, func(context.Context) ([]byte, error) { return blob, nil })
	return nil
}

func (jsonMode) content(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	fs := sg.fs
	blob, err := sh.v.s.opts.Cache.Get(ctx, fs.jsonKey, func(ctx context.Context) ([]byte, error) {
		blob, _, err := sh.v.renderJSON(ctx, sg.add)
		return blob, err
	})
	if err != nil {
		return nil, sh.readErr(ctx, sg, err)
	}
	if blobLen(blob) != fs.n {
		return nil, sh.readErr(ctx, sg, fmt.Errorf("rendered %d rows, indexed %d", blobLen(blob), fs.n))
	}
	return blobValue(blob, li), nil
}

// fill renders the file's rows into the cache (when they are not there).
func (m jsonMode) fill(ctx context.Context, sh *Shard, sg *segment, li int) error {
	_, err := m.content(ctx, sh, sg, li)
	return err
}

// schemaID identifies the schema JSON samples are rendered with.
func (v *Version) schemaID() string {
	return strconv.Itoa(len(v.schemaJSON)) + ":" + hashString(string(v.schemaJSON))
}

// renderJSON renders the live rows of f, one JSON object and "\n" each,
// packed as a blob, with their physical row indexes.
func (v *Version) renderJSON(ctx context.Context, f *snapshot.AddFile) ([]byte, []int64, error) {
	var vals [][]byte
	var rows []int64
	var buf []byte
	var offs []int
	err := v.s.opts.Rows.ScanJSON(ctx, v.snap, f, func(row int64, js []byte) {
		offs = append(offs, len(buf))
		buf = append(buf, js...)
		buf = append(buf, '\n')
		rows = append(rows, row)
	})
	if err != nil {
		return nil, nil, err
	}
	vals = make([][]byte, len(offs))
	for j, o := range offs {
		end := len(buf)
		if j+1 < len(offs) {
			end = offs[j+1]
		}
		vals[j] = buf[o:end]
	}
	return packBlob(0, vals, nil), rows, nil
}
