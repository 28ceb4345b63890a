package scan

import (
	"context"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// fieldPlan is how one field of a read is filled for one file.
type fieldPlan struct {
	constant bool // a partition column, or a column the file lacks
	value    any  // the constant's value
	root     *node
	leaves   []*parquet.Column
	flat     bool // one leaf, not repeated: read without assembly
}

// plan resolves fields against the file: partition columns take their
// value from the log, the others their Parquet columns.
func (r *FileReader) plan(fields []snapshot.StructField) ([]fieldPlan, error) {
	out := make([]fieldPlan, len(fields))
	for i := range fields {
		f := &fields[i]
		if r.isPartition(f.Name) {
			raw, ok := r.snap.PartitionValue(r.add, f.Name)
			var rawp *string
			if ok {
				rawp = &raw
			}
			v, err := parsePartitionValue(f.Type, rawp, r.tz)
			if err != nil {
				return nil, fmt.Errorf("partition column %q: %w", f.Name, err)
			}
			out[i] = fieldPlan{constant: true, value: v}
			continue
		}
		if err := checkTypeChanges(f); err != nil {
			return nil, err
		}
		col := r.column(f)
		if col == nil {
			out[i] = fieldPlan{constant: true}
			continue
		}
		res := resolver{mode: r.mode}
		root, err := res.build(f.Type, col, false)
		if err != nil {
			return nil, err
		}
		if err := checkCodecs(r.file, res.leaves); err != nil {
			return nil, err
		}
		out[i] = fieldPlan{root: root, leaves: res.leaves,
			flat: root.kind == kindLeaf && len(res.leaves) == 1 && res.leaves[0].MaxRepetitionLevel() == 0}
	}
	return out, nil
}

// ReadRows calls fn for every physical row in [from, to) of the file, in
// order, with the values of fields (logical top-level fields of the
// table; partition columns filled in from the log). Deletion vectors are
// not applied: see Scan.File. The row slice and the []byte values in it
// alias buffers that are reused: they are valid only during the call.
func (r *FileReader) ReadRows(ctx context.Context, fields []snapshot.StructField, from, to int64, fn func(row int64, values []any) error) error {
	return r.readRows(ctx, fields, from, to, nil, fn)
}

func (r *FileReader) readRows(ctx context.Context, fields []snapshot.StructField, from, to int64, skip *roaring64.Bitmap, fn func(row int64, values []any) error) (err error) {
	defer func() {
		if err != nil {
			err = r.err(err)
		}
	}()
	plans, err := r.plan(fields)
	if err != nil {
		return err
	}
	from, to = max(from, 0), min(to, r.NumRows())
	rec := &ioRecorder{r: storage.ReaderAt(ctx, r.st, r.key)}
	rd := rowReader{ctx: ctx, plans: plans, row: make([]any, len(fields)), fn: fn}
	if skip != nil && !skip.IsEmpty() {
		rd.dels = skip.Iterator()
	}
	start := int64(0)
	for i, rg := range r.file.RowGroups() {
		n := rg.NumRows()
		lo, hi := max(from, start), min(to, start+n)
		if lo < hi {
			if err := rd.rowGroup(r.pq, i, rg, start, lo, hi, rec); err != nil {
				return rec.cause(err)
			}
		}
		start += n
		if start >= to {
			break
		}
	}
	return nil
}

// rowReader reads rows of one file for a set of field plans.
type rowReader struct {
	ctx     context.Context
	plans   []fieldPlan
	row     []any
	fn      func(int64, []any) error
	dels    roaring64.IntPeekable64 // deleted rows, nil for none
	cursors [][]*leafCursor         // per plan, per leaf
	ent     [][]parquet.Value       // per leaf of the field being assembled
}

// rowGroup reads the rows [lo, hi) (file positions) of row group rg (the
// rgi-th of file pq), which starts at file row start. Each column chunk it
// needs is read whole with one read (up to pqcheck.MaxChunkBytes), its
// pages checked (pqcheck.CheckPages), and decoded from memory.
func (rd *rowReader) rowGroup(pq *pqcheck.File, rgi int, rg parquet.RowGroup, start, lo, hi int64, rec *ioRecorder) (err error) {
	defer recoverParquet(&err)
	chunks := rg.ColumnChunks()
	rd.cursors = rd.cursors[:0]
	defer func() {
		for _, cs := range rd.cursors {
			for _, c := range cs {
				c.close()
			}
		}
	}()
	for _, p := range rd.plans {
		cs := make([]*leafCursor, 0, len(p.leaves))
		rd.cursors = append(rd.cursors, cs) // closed by the defer, also on an error
		for _, l := range p.leaves {
			pages, err := leafPages(pq, rec, rgi, chunks, l)
			if err != nil {
				return err
			}
			cs = append(cs, newLeafCursor(l, pages))
			rd.cursors[len(rd.cursors)-1] = cs
			if lo > start {
				if err := pages.SeekToRow(lo - start); err != nil {
					return fmt.Errorf("column %s: seek to row %d: %w", colPath(l), lo-start, err)
				}
			}
		}
	}
	nextDel := int64(math.MaxInt64)
	if rd.dels != nil {
		rd.dels.AdvanceIfNeeded(uint64(lo))
		if rd.dels.HasNext() {
			nextDel = int64(rd.dels.PeekNext())
		}
	}
	for row := lo; row < hi; row++ {
		if (row-lo)&1023 == 0 {
			if err := rd.ctx.Err(); err != nil {
				return err
			}
		}
		if row == nextDel {
			rd.dels.Next()
			nextDel = math.MaxInt64
			if rd.dels.HasNext() {
				nextDel = int64(rd.dels.PeekNext())
			}
			if err := rd.skipRow(); err != nil {
				return err
			}
			continue
		}
		if err := rd.readRow(); err != nil {
			return err
		}
		if err := callFn(rd.fn, row, rd.row); err != nil {
			return err
		}
	}
	return nil
}

func (rd *rowReader) skipRow() error {
	for _, cs := range rd.cursors {
		for _, c := range cs {
			if err := c.skip(1); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRow fills rd.row with the next row's values.
func (rd *rowReader) readRow() error {
	for i := range rd.plans {
		p := &rd.plans[i]
		cs := rd.cursors[i]
		switch {
		case p.constant:
			rd.row[i] = p.value
		case p.flat:
			vs, err := cs[0].next()
			if err != nil {
				return err
			}
			if v := vs[0]; v.DefinitionLevel() < p.root.def {
				rd.row[i] = nil
			} else {
				rd.row[i] = p.root.conv(v)
			}
		default:
			rd.ent = rd.ent[:0]
			for _, c := range cs {
				vs, err := c.next()
				if err != nil {
					return err
				}
				rd.ent = append(rd.ent, vs)
			}
			rd.row[i] = p.root.value(rd.ent)
		}
	}
	return nil
}

// leafPages are the pages of leaf column l in row group rgi: its chunk
// read whole through rec and checked (pqcheck.File.StageChunk), for the
// row and the column paths alike.
func leafPages(pq *pqcheck.File, rec *ioRecorder, rgi int, chunks []parquet.ColumnChunk, l *parquet.Column) (*parquet.FilePages, error) {
	cc, ok := chunks[l.Index()].(*parquet.FileColumnChunk)
	if !ok {
		return nil, fmt.Errorf("column %s: not a file column chunk", colPath(l))
	}
	staged, err := pq.StageChunk(rec, rgi, l.Index())
	if err != nil {
		return nil, err
	}
	return cc.PagesFrom(staged), nil
}
