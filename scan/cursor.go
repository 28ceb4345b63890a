package scan

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// leafCursor walks the values of one leaf column chunk row by row, a page
// at a time. The values of a page alias its decompressed buffer: they stay
// valid until the cursor moves to the next page.
type leafCursor struct {
	col      *parquet.Column
	pages    parquet.Pages
	page     parquet.Page
	vals     []parquet.Value
	pos      int
	repeated bool
	span     []parquet.Value // a row that crosses a page boundary, cloned
}

func newLeafCursor(col *parquet.Column, pages parquet.Pages) *leafCursor {
	return &leafCursor{col: col, pages: pages, repeated: col.MaxRepetitionLevel() > 0}
}

// load reads the next page with values. It returns io.EOF at the end of
// the column chunk.
func (c *leafCursor) load() error {
	for {
		if c.page != nil {
			parquet.Release(c.page)
			c.page = nil
		}
		c.vals, c.pos = c.vals[:0], 0
		pg, err := c.pages.ReadPage()
		if err != nil {
			return err
		}
		c.page = pg
		n := int(pg.NumValues())
		if cap(c.vals) < n {
			c.vals = make([]parquet.Value, n)
		}
		c.vals = c.vals[:n]
		got, err := readAllValues(pg.Values(), c.vals)
		if err != nil {
			return fmt.Errorf("column %s: %w", colPath(c.col), err)
		}
		c.vals = c.vals[:got]
		if got > 0 {
			return nil
		}
	}
}

func readAllValues(r parquet.ValueReader, vals []parquet.Value) (int, error) {
	got := 0
	for got < len(vals) {
		n, err := r.ReadValues(vals[got:])
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
	}
	return got, nil
}

// next returns the values of the next row: one for a column that is not
// repeated, all of the row's values for a repeated one.
func (c *leafCursor) next() ([]parquet.Value, error) {
	if c.pos >= len(c.vals) {
		if err := c.load(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("column %s has fewer values than the row group has rows", colPath(c.col))
			}
			return nil, err
		}
	}
	start := c.pos
	c.pos++
	if !c.repeated {
		return c.vals[start:c.pos], nil
	}
	c.scanRow()
	if c.pos < len(c.vals) {
		return c.vals[start:c.pos], nil
	}
	// The page ended: in data page v1 a row may go on in the next page.
	c.span = c.span[:0]
	for {
		for _, v := range c.vals[start:] {
			c.span = append(c.span, v.Clone())
		}
		if err := c.load(); err != nil {
			if errors.Is(err, io.EOF) {
				return c.span, nil
			}
			return nil, err
		}
		if c.vals[0].RepetitionLevel() == 0 {
			return c.span, nil
		}
		start = 0
		c.scanRow()
		if c.pos < len(c.vals) {
			for _, v := range c.vals[:c.pos] {
				c.span = append(c.span, v.Clone())
			}
			return c.span, nil
		}
	}
}

// scanRow moves pos past the values that continue the current row.
func (c *leafCursor) scanRow() {
	for c.pos < len(c.vals) && c.vals[c.pos].RepetitionLevel() != 0 {
		c.pos++
	}
}

// skip passes over n rows.
func (c *leafCursor) skip(n int64) error {
	if !c.repeated {
		for n > 0 {
			if c.pos >= len(c.vals) {
				if err := c.load(); err != nil {
					if errors.Is(err, io.EOF) {
						return fmt.Errorf("column %s has fewer values than the row group has rows", colPath(c.col))
					}
					return err
				}
			}
			k := min(int64(len(c.vals)-c.pos), n)
			c.pos += int(k)
			n -= k
		}
		return nil
	}
	for ; n > 0; n-- {
		if _, err := c.next(); err != nil {
			return err
		}
	}
	return nil
}

func (c *leafCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
	}
}
