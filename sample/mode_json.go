package sample

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/internal/packed"
	"github.com/deltafs/deltafs/snapshot"
)

// jsonMode: without a data column, a sample is its row as JSON, exactly
// what `deltafs cat` prints for it (scan.AppendJSON) plus "\n". A file's
// rows are rendered once, when it is indexed (which measures them), and
// kept in the page.Cache under fileSamples.jsonKey; reads take their row
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
	fs.jsonKey = fs.ref.CacheKey("json", v.schemaID(), f.DeletionVector.UniqueID())
	var want []int64 // the rows to render; nil: every live row
	if b.filtered {
		// The rows the filter keeps, and a key of their own (another
		// filter keeps other rows of the file).
		fs.jsonKey.Unit += whereUnit + b.whereKey
		want = make([]int64, len(b.rows))
		for j, row := range b.rows {
			want[j] = int64(row)
		}
	}
	blob, jrows, err := v.renderJSON(ctx, f, want)
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
		fs.sizes[j] = uint32(len(packed.Value(blob, j)))
	}
	_, _ = v.s.opts.Cache.Get(ctx, fs.jsonKey, func(context.Context) ([]byte, error) { return blob, nil })
	return nil
}

func (jsonMode) content(ctx context.Context, sh *Shard, sg *segment, li int) ([]byte, error) {
	fs := sg.fs
	blob, err := sh.v.s.opts.Cache.Get(ctx, fs.jsonKey, func(ctx context.Context) ([]byte, error) {
		var want []int64
		if strings.Contains(fs.jsonKey.Unit, whereUnit) {
			want = make([]int64, fs.n)
			for j := range want {
				want[j] = fs.row(j)
			}
		}
		blob, _, err := sh.v.renderJSON(ctx, sg.add, want)
		return blob, err
	})
	if err != nil {
		return nil, sh.readErr(ctx, sg, err)
	}
	if packed.Len(blob) != fs.n {
		return nil, sh.readErr(ctx, sg, fmt.Errorf("rendered %d rows, indexed %d", packed.Len(blob), fs.n))
	}
	return packed.Value(blob, li), nil
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

// whereUnit marks the key of a rendering of the rows a filter keeps.
const whereUnit = "\x00where="

// renderJSON renders the live rows of f (want: only those of these
// physical rows, ascending; nil: all), one JSON object and "\n" each,
// packed as a blob, with their physical row indexes.
func (v *Version) renderJSON(ctx context.Context, f *snapshot.AddFile, want []int64) ([]byte, []int64, error) {
	var vals [][]byte
	var rows []int64
	var buf []byte
	var offs []int
	next := 0
	err := v.s.opts.Rows.ScanJSON(ctx, v.snap, f, func(row int64, js []byte) {
		if want != nil {
			if next >= len(want) || want[next] != row {
				return
			}
			next++
		}
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
	return packed.Pack(0, vals, nil), rows, nil
}
