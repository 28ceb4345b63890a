package scan

import (
	"io"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// fakePage is a page of given values (with their levels); only what
// leafCursor uses is implemented.
type fakePage struct {
	parquet.Page
	vals []parquet.Value
}

func (p *fakePage) NumValues() int64            { return int64(len(p.vals)) }
func (p *fakePage) Values() parquet.ValueReader { return &fakeValues{vals: p.vals} }

type fakeValues struct{ vals []parquet.Value }

func (r *fakeValues) ReadValues(out []parquet.Value) (int, error) {
	n := copy(out, r.vals)
	r.vals = r.vals[n:]
	if len(r.vals) == 0 {
		return n, io.EOF
	}
	return n, nil
}

type fakePages struct{ pages []*fakePage }

func (p *fakePages) ReadPage() (parquet.Page, error) {
	if len(p.pages) == 0 {
		return nil, io.EOF
	}
	pg := p.pages[0]
	p.pages = p.pages[1:]
	return pg, nil
}
func (p *fakePages) SeekToRow(int64) error { return nil }
func (p *fakePages) Close() error          { return nil }

// Rows of a repeated column that go on across pages (data page v1 allows
// it) come out whole; empty pages are passed over.
func TestCursorRowsAcrossPages(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{"l": parquet.Repeated(parquet.Int(32))})
	f := writeParquet(t, schema, []parquet.Row{{lv(parquet.Int32Value(0), 0, 1, 0)}})
	pf, err := parquet.OpenFile(bytesReader(f), int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	leaf := pf.Root().Column("l")
	v := func(x int32, rep int) parquet.Value { return parquet.Int32Value(x).Level(rep, 1, 0) }
	pages := &fakePages{pages: []*fakePage{
		{vals: []parquet.Value{v(1, 0), v(2, 1)}},
		{vals: []parquet.Value{v(3, 1), v(4, 0), v(5, 1)}},
		{},
		{vals: []parquet.Value{v(6, 1)}},
		{vals: []parquet.Value{v(7, 0)}},
		{vals: []parquet.Value{v(8, 0), v(9, 0), v(10, 1)}},
	}}
	c := newLeafCursor(leaf, pages)
	var rows [][]int32
	for range 5 {
		vs, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		var r []int32
		for _, x := range vs {
			r = append(r, x.Int32())
		}
		rows = append(rows, r)
	}
	want := [][]int32{{1, 2, 3}, {4, 5, 6}, {7}, {8}, {9, 10}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if _, err := c.next(); err == nil {
		t.Error("past the end: want an error")
	}
	// skip passes over whole rows likewise.
	pages.pages = []*fakePage{
		{vals: []parquet.Value{v(1, 0), v(2, 1)}},
		{vals: []parquet.Value{v(3, 1), v(4, 0)}},
	}
	c = newLeafCursor(leaf, pages)
	if err := c.skip(1); err != nil {
		t.Fatal(err)
	}
	if vs, err := c.next(); err != nil || len(vs) != 1 || vs[0].Int32() != 4 {
		t.Errorf("after skip: %v, %v", vs, err)
	}
}
