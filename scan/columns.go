package scan

import (
	"bytes"
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// BatchRows is the most rows a Batch spans: physical rows of the data
// file, deleted ones included, so a batch has at most this many live rows.
const BatchRows = 1 << 16

// maxBatchBytes bounds what a batch copies for the values a page does not
// hold as the vector wants them: per string or binary column, the values
// of a dictionary-encoded page or a partition value; for the nested
// columns together, their assembled values. A batch is cut shorter rather
// than copy more, but always holds at least one row. Without it, a
// dictionary of one large value and a page of indexes to it would expand
// to far more than either.
const maxBatchBytes = 64 << 20

// FileColumns reads the live rows of data file f, in file order, a batch
// at a time: it calls fn with the physical indexes of a run of live rows
// and a Vector of each projected column's values for them (Fields order),
// the same values Scan.File gives, typed. Rows deleted by f's deletion
// vector are left out (a batch of deleted rows only is not passed). A
// batch ends where a page of one of the primitive columns ends, within a
// row group, and spans at most BatchRows rows; it is cut shorter (never
// below one row) when the values it copies would pass 64 MiB: those of a
// dictionary-encoded string or binary column, of a string or binary
// partition column, of the nested columns. The Batch and everything in it
// alias buffers (some of them the pages' own) reused once fn returns.
//
// Integers, floats, strings and binary values are read from the pages'
// typed values, without a value object or an allocation per value;
// booleans and the KindAny types through the row path's conversion.
// With no columns projected, batches carry the live rows' indexes only.
// Errors are as Scan.File's; an error returned by fn is returned as it is.
func (s *Scan) FileColumns(ctx context.Context, f *snapshot.AddFile, fn func(b *Batch) error) error {
	r, dv, err := s.open(ctx, f)
	if err != nil {
		return err
	}
	ferr := error(nil)
	err = r.readColumns(ctx, s.fields, dv, func(b *Batch) error {
		ferr = fn(b)
		return ferr
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// readColumns reads the rows of the file outside skip in batches.
func (r *FileReader) readColumns(ctx context.Context, fields []snapshot.StructField, skip *roaring64.Bitmap, fn func(*Batch) error) (err error) {
	defer func() {
		if err != nil {
			err = r.err(err)
		}
	}()
	plans, err := r.plan(fields)
	if err != nil {
		return err
	}
	rec := &ioRecorder{r: storage.ReaderAt(ctx, r.st, r.key)}
	br := &batchReader{ctx: ctx, fields: fields, plans: plans, bufs: make([]colBuffers, len(fields))}
	br.call = func(_ int64, b *Batch) error { return fn(b) }
	br.batch.Cols = make([]Vector, len(fields))
	for i := range fields {
		br.batch.Cols[i] = Vector{Kind: KindOf(fields[i].Type), Type: fields[i].Type}
	}
	if skip != nil && !skip.IsEmpty() {
		br.skip, br.dels = skip, skip.Iterator()
	}
	for i := range plans {
		if p := &plans[i]; !p.constant && !p.flat {
			br.assembled = append(br.assembled, i)
		}
	}
	start := int64(0)
	for i, rg := range r.file.RowGroups() {
		if n := rg.NumRows(); n > 0 {
			if err := br.rowGroup(r.pq, i, rg, start, rec); err != nil {
				return rec.cause(err)
			}
		}
		start += rg.NumRows()
	}
	return nil
}

// batchReader reads the batches of one file.
type batchReader struct {
	ctx    context.Context
	fields []snapshot.StructField
	plans  []fieldPlan
	call   func(int64, *Batch) error
	skip   *roaring64.Bitmap       // deleted rows, nil for none
	dels   roaring64.IntPeekable64 // iterates skip
	batch  Batch
	bufs   []colBuffers // per field
	rows   []int64
	runs   []run

	// Per field, for the row group being read: a flat column's reader, or
	// the leaf cursors of another (the assembled fields).
	flat      []*flatReader
	cursors   [][]*leafCursor
	assembled []int
	ent       [][]parquet.Value
}

// run is a range of live rows: n rows from the at-th row of a batch.
type run struct{ at, n int }

// rowGroup reads row group rg (the rgi-th of file pq, starting at file
// row start). Each column chunk it needs is read whole, checked
// (pqcheck.StageChunk) and decoded from memory, as Scan.File does.
func (br *batchReader) rowGroup(pq *pqcheck.File, rgi int, rg parquet.RowGroup, start int64, rec *ioRecorder) (err error) {
	defer recoverParquet(&err)
	chunks := rg.ColumnChunks()
	br.flat = make([]*flatReader, len(br.plans))
	br.cursors = make([][]*leafCursor, len(br.plans))
	defer func() {
		for _, f := range br.flat {
			if f != nil {
				f.close()
			}
		}
		for _, cs := range br.cursors {
			for _, c := range cs {
				c.close()
			}
		}
	}()
	for i := range br.plans {
		p := &br.plans[i]
		for _, l := range p.leaves {
			pages, err := leafPages(pq, rec, rgi, chunks, l)
			if err != nil {
				return err
			}
			if p.flat {
				br.flat[i] = newFlatReader(l, pages, br.fields[i].Type, p.root.conv)
			} else {
				br.cursors[i] = append(br.cursors[i], newLeafCursor(l, pages))
			}
		}
	}
	rows := rg.NumRows()
	for at := int64(0); at < rows; {
		if err := br.ctx.Err(); err != nil {
			return err
		}
		k := int(min(rows-at, BatchRows))
		for _, f := range br.flat {
			if f != nil {
				left, err := f.ready()
				if err != nil {
					return err
				}
				k = min(k, left)
			}
		}
		for i, f := range br.flat {
			if f != nil {
				k = f.fit(k)
			} else if p := &br.plans[i]; p.constant && br.batch.Cols[i].Kind == KindBytes {
				if l := constLen(p.value); l > 0 {
					k = min(k, max(1, maxBatchBytes/l))
				}
			}
		}
		k, err := br.batchOf(start+at, k)
		if err != nil {
			return err
		}
		at += int64(k)
	}
	return nil
}

// constLen is the length of a string or binary constant.
func constLen(x any) int {
	switch t := x.(type) {
	case string:
		return len(t)
	case []byte:
		return len(t)
	}
	return 0
}

// batchOf reads the k rows from file row first (fewer when the nested
// columns' values would take more than maxBatchBytes), passes their live
// rows to the callback, and returns how many rows it read.
func (br *batchReader) batchOf(first int64, k int) (int, error) {
	runs, n := br.live(first, k)
	if len(br.assembled) > 0 {
		// First, as they may cut the batch short.
		end, err := br.fillAssembled(runs, k, n)
		if err != nil {
			return 0, err
		}
		if end < k {
			k = end
			runs, n = cutRuns(runs, k)
			if br.skip != nil {
				// live consumed the deleted rows up to the old end.
				br.dels = br.skip.Iterator()
			}
		}
	}
	// With no live row, the columns still pass over the k rows.
	rows := grow(&br.rows, n)
	o := 0
	for _, rn := range runs {
		for i := range rn.n {
			rows[o+i] = first + int64(rn.at+i)
		}
		o += rn.n
	}
	br.batch.Rows = rows
	for i := range br.plans {
		p, v, cb := &br.plans[i], &br.batch.Cols[i], &br.bufs[i]
		var err error
		switch {
		case p.constant:
			err = fillConstant(v, cb, p.value, n)
		case p.flat:
			err = br.flat[i].fill(v, cb, runs, k, n)
		}
		if err != nil {
			return 0, err
		}
	}
	if n == 0 {
		return k, nil
	}
	return k, callFn(br.call, 0, &br.batch)
}

// cutRuns keeps the runs within the first k rows.
func cutRuns(runs []run, k int) ([]run, int) {
	n := 0
	for i, r := range runs {
		if r.at >= k {
			return runs[:i], n
		}
		runs[i].n = min(r.n, k-r.at)
		n += runs[i].n
	}
	return runs, n
}

// live returns the runs of live rows among the k rows from file row
// first, and how many rows they hold: the deletion vector is walked with
// its iterator, once.
func (br *batchReader) live(first int64, k int) ([]run, int) {
	runs := br.runs[:0]
	cur, end := first, first+int64(k)
	if br.dels != nil {
		br.dels.AdvanceIfNeeded(uint64(first))
		for br.dels.HasNext() {
			d := int64(br.dels.PeekNext())
			if d >= end {
				break
			}
			if d > cur {
				runs = append(runs, run{int(cur - first), int(d - cur)})
			}
			cur = d + 1
			br.dels.Next()
		}
	}
	if cur < end {
		runs = append(runs, run{int(cur - first), int(end - cur)})
	}
	br.runs = runs
	n := 0
	for _, r := range runs {
		n += r.n
	}
	return runs, n
}

// fillConstant sets every value of v to x: a partition value, or null for
// a column the file lacks.
func fillConstant(v *Vector, cb *colBuffers, x any, n int) error {
	cb.start(v, n)
	for o := range n {
		if err := cb.store(v, o, x); err != nil {
			return err
		}
	}
	cb.end(v)
	return nil
}

// fillAssembled reads the nested columns row by row through their leaf
// cursors and assembles their values, as Scan.File does, for the live
// rows among the next k (runs, n of them). Their byte arrays are copied: a
// cursor releases a page when it moves on, within the batch. A row can
// hold a large value (a list of many elements, or of values of a
// dictionary), so the batch ends after the row that brings the values'
// size past maxBatchBytes: it returns the rows read, k or fewer.
func (br *batchReader) fillAssembled(runs []run, k, n int) (int, error) {
	skip := func(m int) error {
		for _, i := range br.assembled {
			for _, c := range br.cursors[i] {
				if err := c.skip(int64(m)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, i := range br.assembled {
		br.bufs[i].start(&br.batch.Cols[i], n)
	}
	o, cur, size := 0, 0, 0
	end := k
rows:
	for _, rn := range runs {
		if err := skip(rn.at - cur); err != nil {
			return 0, err
		}
		for r := rn.at; r < rn.at+rn.n; r++ {
			for _, i := range br.assembled {
				br.ent = br.ent[:0]
				for _, c := range br.cursors[i] {
					vs, err := c.next()
					if err != nil {
						return 0, err
					}
					br.ent = append(br.ent, vs)
				}
				x := detach(br.plans[i].root.value(br.ent))
				size += sizeOf(x)
				if err := br.bufs[i].store(&br.batch.Cols[i], o, x); err != nil {
					return 0, err
				}
			}
			o++
			if size > maxBatchBytes && r+1 < k {
				end = r + 1
				break rows
			}
		}
		cur = rn.at + rn.n
	}
	if end == k {
		if err := skip(k - cur); err != nil {
			return 0, err
		}
	}
	for _, i := range br.assembled {
		v := &br.batch.Cols[i]
		br.bufs[i].end(v)
		// Nested columns are KindAny (only primitive types are flat).
		v.Any = v.Any[:o]
		if v.Nulls != nil {
			v.Nulls = v.Nulls[:o]
		}
	}
	return end, nil
}

// sizeOf approximates the memory an assembled value takes: its bytes and
// strings, and an interface per value.
func sizeOf(x any) int {
	const word = 16
	switch t := x.(type) {
	case []byte:
		return word + len(t)
	case string:
		return word + len(t)
	case []any:
		n := word
		for _, e := range t {
			n += sizeOf(e)
		}
		return n
	case Struct:
		return word + sizeOf(t.Values)
	case Map:
		n := word
		for _, e := range t {
			n += sizeOf(e.Key) + sizeOf(e.Value)
		}
		return n
	}
	return word
}

// detach copies the byte arrays of an assembled value, which alias page
// buffers (its containers are its own).
func detach(x any) any {
	switch t := x.(type) {
	case []byte:
		return bytes.Clone(t)
	case []any:
		for i := range t {
			t[i] = detach(t[i])
		}
	case Struct:
		for i := range t.Values {
			t.Values[i] = detach(t.Values[i])
		}
	case Map:
		for i := range t {
			t[i].Key, t[i].Value = detach(t[i].Key), detach(t[i].Value)
		}
	}
	return x
}
