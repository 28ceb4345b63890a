package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/storage"
)

// Reading Parquet checkpoints column by column. parquet-go's struct and
// generic readers reconstruct rows from the schema and panic on some
// writers' layouts (arrow-rs names MAP groups "entries"), and an absent
// optional group comes back as a pointer to a zero struct. So this file
// reads leaf columns by path, with their definition and repetition levels,
// and the callers decide presence from definition levels. Any panic left
// in parquet-go becomes an error naming the file.

// pqValue is one leaf value with its levels, copied out of the page.
type pqValue struct {
	s        string // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, INT96 (12 bytes)
	i        int64  // INT32, INT64, BOOLEAN (0/1); FLOAT and DOUBLE as float64 bits
	def, rep int16
	null     bool
}

// pqColumn is one leaf column of a row group: its values, and where each
// row starts in them.
type pqColumn struct {
	maxDef int
	vals   []pqValue
	rows   []int // rows[r] is the index of row r's first value; len = rows+1
}

// present reports whether row r has a value (all ancestors and the leaf
// defined) and returns it.
func (c *pqColumn) value(r int) (pqValue, bool) {
	if c == nil {
		return pqValue{}, false
	}
	v := c.vals[c.rows[r]]
	return v, int(v.def) == c.maxDef
}

// defined reports whether row r's value is defined at least to level def:
// the ancestor whose definition level is def is present.
func (c *pqColumn) defined(r, def int) bool {
	if c == nil {
		return false
	}
	return int(c.vals[c.rows[r]].def) >= def
}

// pqFile is an opened Parquet file of the log.
type pqFile struct {
	key  string
	f    *parquet.File
	pq   *pqcheck.File // the checked footer
	data []byte        // the whole file
	size int64         // bytes
}

// openParquet opens a Parquet log file. parquet-go panics are turned into
// errors.
func openParquet(ctx context.Context, st storage.Storage, key string, size int64) (pf *pqFile, err error) {
	defer recoverParquet(&err)
	if size < 0 {
		info, err := st.Stat(ctx, key)
		if err != nil {
			return nil, storageCause(err)
		}
		size = info.Size
	}
	// A checkpoint is read whole, so read it into memory once: fewer
	// round trips on object stores than parquet-go's many small reads.
	data, err := storage.ReadRange(ctx, st, key, 0, size)
	if err != nil {
		return nil, storageCause(err)
	}
	// Every size the footer claims is checked before parquet-go sees it
	// (package pqcheck): parquet-go allocates each list at its claimed
	// length.
	if len(data) < 4 || string(data[:4]) != "PAR1" {
		return nil, corruptf("not a Parquet file (magic bytes missing)")
	}
	pq, err := pqcheck.Footer(data, size)
	if err != nil {
		return nil, corruptf("%v", err)
	}
	f, err := parquet.OpenFile(bytesReaderAt(data), size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, corruptf("parquet: %v", err)
	}
	return &pqFile{key: key, f: f, pq: pq, data: data, size: size}, nil
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// recoverParquet turns a panic into an error (deferred).
func recoverParquet(err *error) {
	if r := recover(); r != nil {
		*err = corruptf("parquet reader failed: %v", r)
	}
}

// pqPath is a resolved path in the file schema: the leaf column index (-1
// when the file has no such column) and the definition level of every
// node on the path (defs[i] is the level at which path[i] is present).
type pqPath struct {
	col  int
	defs []int
	node parquet.Node
}

// resolve finds a node by field names. A name "*" matches the single
// child of a group (the repeated group of a MAP or LIST, whatever its
// name: key_value, entries, list, bag, array...), a name "#0"/"#1" the
// first/second child (a MAP's key and value).
func (p *pqFile) resolve(names ...string) (pqPath, bool) {
	var node parquet.Node = p.f.Schema()
	def := 0
	out := pqPath{col: -1}
	real := make([]string, 0, len(names))
	for _, name := range names {
		fields := node.Fields()
		var next parquet.Field
		switch name {
		case "*":
			if len(fields) != 1 {
				return out, false
			}
			next = fields[0]
		case "#0", "#1":
			i := int(name[1] - '0')
			if len(fields) != 2 {
				return out, false
			}
			next = fields[i]
		default:
			for _, f := range fields {
				if f.Name() == name {
					next = f
					break
				}
			}
		}
		if next == nil {
			return out, false
		}
		if next.Optional() || next.Repeated() {
			def++
		}
		out.defs = append(out.defs, def)
		real = append(real, next.Name())
		node = next
	}
	out.node = node
	if node.Leaf() {
		if lc, ok := p.f.Schema().Lookup(real...); ok {
			out.col = lc.ColumnIndex
		}
	}
	return out, true
}

// readColumn reads leaf column col of row group rg (the rgIndex-th) whole.
func (p *pqFile) readColumn(rg parquet.RowGroup, rgIndex, col int, maxDef int) (c *pqColumn, err error) {
	defer recoverParquet(&err)
	chunks := rg.ColumnChunks()
	if col < 0 || col >= len(chunks) {
		return nil, nil
	}
	// Bounds from the file size, not from its (possibly damaged)
	// metadata: every checkpoint row is an action with at least one byte
	// of its own, and a value takes at least a bit (map keys are unique,
	// so repeated values cannot all be one run).
	n := rg.NumRows()
	if n < 0 || n > p.size {
		return nil, corruptf("parquet row group of %d rows in a %d-byte file", n, p.size)
	}
	maxValues := 8*p.size + 1024
	off, size := p.pq.ChunkRange(rgIndex, col)
	if _, err := p.pq.CheckPages(rgIndex, col, off, p.data[off:off+size], maxValues); err != nil {
		return nil, corruptf("%v", err)
	}
	c = &pqColumn{maxDef: maxDef, rows: make([]int, 0, min(n, 1<<16)+1)}
	pages := chunks[col].Pages()
	defer pages.Close()
	buf := make([]parquet.Value, 1024)
	for {
		pg, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, corruptf("parquet column %d: %v", col, err)
		}
		vr := pg.Values()
		for {
			k, err := vr.ReadValues(buf)
			for _, v := range buf[:k] {
				pv := pqValue{def: int16(v.DefinitionLevel()), rep: int16(v.RepetitionLevel()), null: v.IsNull()}
				if !pv.null {
					switch v.Kind() {
					case parquet.Boolean:
						if v.Boolean() {
							pv.i = 1
						}
					case parquet.Int32:
						pv.i = int64(v.Int32())
					case parquet.Int64:
						pv.i = v.Int64()
					case parquet.Float:
						pv.i = int64(math.Float64bits(float64(v.Float())))
					case parquet.Double:
						pv.i = int64(math.Float64bits(v.Double()))
					case parquet.Int96:
						pv.s = string(v.Bytes())
					case parquet.ByteArray, parquet.FixedLenByteArray:
						pv.s = string(v.ByteArray())
					}
				}
				if pv.rep == 0 {
					c.rows = append(c.rows, len(c.vals))
				}
				c.vals = append(c.vals, pv)
			}
			if int64(len(c.rows)) > n || int64(len(c.vals)) > maxValues {
				parquet.Release(pg)
				return nil, corruptf("parquet column %d: more values than the row group can hold", col)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(pg)
				return nil, corruptf("parquet column %d: %v", col, err)
			}
			if k == 0 {
				parquet.Release(pg)
				return nil, corruptf("parquet column %d: page reader made no progress", col)
			}
		}
		parquet.Release(pg)
	}
	if int64(len(c.rows)) != n {
		return nil, corruptf("parquet column %d: %d rows in a row group of %d", col, len(c.rows), n)
	}
	c.rows = append(c.rows, len(c.vals))
	return c, nil
}

// groupReader reads the columns a caller asks for from one row group,
// each once.
type groupReader struct {
	p    *pqFile
	rg   parquet.RowGroup
	idx  int // rg's index in the file
	cols map[string]*pqColumn
	err  error
}

func (p *pqFile) rowGroups() []parquet.RowGroup { return p.f.RowGroups() }

// scalar returns the column of a scalar leaf (nil when absent from the
// file), with the definition level of each path element.
func (g *groupReader) column(names ...string) (*pqColumn, []int) {
	path, ok := g.p.resolve(names...)
	if !ok || path.col < 0 {
		return nil, path.defs
	}
	key := fmt.Sprint(names)
	if c, ok := g.cols[key]; ok {
		return c, path.defs
	}
	c, err := g.p.readColumn(g.rg, g.idx, path.col, path.defs[len(path.defs)-1])
	if err != nil && g.err == nil {
		g.err = err
	}
	if g.cols == nil {
		g.cols = map[string]*pqColumn{}
	}
	g.cols[key] = c
	return c, path.defs
}

// stringMap reads a MAP<string,string> field at row r: nil when the map is
// null or empty. keyCol and valCol come from mapColumns.
type mapCols struct {
	key, val *pqColumn
	entryDef int // definition level at which an entry exists
}

func (g *groupReader) mapColumns(names ...string) mapCols {
	k, defs := g.column(append(names, "*", "#0")...)
	v, _ := g.column(append(names, "*", "#1")...)
	if k == nil || len(defs) < 2 {
		return mapCols{}
	}
	return mapCols{key: k, val: v, entryDef: defs[len(defs)-2]}
}

func (m mapCols) stringMap(r int) map[string]*string {
	if m.key == nil {
		return nil
	}
	var out map[string]*string
	for i := m.key.rows[r]; i < m.key.rows[r+1]; i++ {
		kv := m.key.vals[i]
		if int(kv.def) < m.entryDef {
			continue
		}
		if out == nil {
			out = map[string]*string{}
		}
		var val *string
		if m.val != nil && i < len(m.val.vals) && int(m.val.vals[i].def) == m.val.maxDef {
			s := m.val.vals[i].s
			val = &s
		}
		out[kv.s] = val
	}
	return out
}

func (m mapCols) plainMap(r int) map[string]string {
	sm := m.stringMap(r)
	if sm == nil {
		return nil
	}
	out := make(map[string]string, len(sm))
	for k, v := range sm {
		if v != nil {
			out[k] = *v
		} else {
			out[k] = ""
		}
	}
	return out
}

// listCols reads a LIST<string> field (three-level, or the legacy
// two-level form whose repeated field is the element itself).
type listCols struct {
	elem     *pqColumn
	entryDef int
}

func (g *groupReader) listColumns(names ...string) listCols {
	if c, defs := g.column(append(names, "*", "*")...); c != nil {
		return listCols{elem: c, entryDef: defs[len(defs)-2]}
	}
	if c, defs := g.column(append(names, "*")...); c != nil {
		return listCols{elem: c, entryDef: defs[len(defs)-1]}
	}
	return listCols{}
}

func (l listCols) strings(r int) []string {
	if l.elem == nil {
		return nil
	}
	var out []string
	for i := l.elem.rows[r]; i < l.elem.rows[r+1]; i++ {
		v := l.elem.vals[i]
		if int(v.def) < l.entryDef || int(v.def) < l.elem.maxDef {
			continue // no entry, or a null element
		}
		out = append(out, v.s)
	}
	return out
}
