package scan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/deltafs/deltafs/snapshot"
)

// flatReader reads one flat leaf column (a top-level primitive column, not
// repeated) of one column chunk page by page into vectors, for
// Scan.FileColumns. Integers, floats and byte arrays are read from the
// page's typed values (parquet-go's Page.Data: the decoded page buffer
// itself, or dictionary indexes and the dictionary page's values), with
// no parquet.Value and no allocation per value. Other pages (booleans,
// the types of KindAny, a page parquet-go holds in another form) go
// through parquet.Value and the column's converter, as Scan.File does.
type flatReader struct {
	col    *parquet.Column
	pages  parquet.Pages
	page   parquet.Page
	out    Kind
	num    numSource // how the column's numbers become the vector's
	trunc  int       // 16 or 8: integers truncated to short or byte, as the converter does
	phys   parquet.Kind
	conv   converter
	maxDef byte

	// The current page.
	rows, pos int    // its rows (one value each), the next one
	defs      []byte // its definition levels; nil for a required column
	vi        int    // its next non-null value (an index into idx, or the values)
	nvals     int    // its non-null values
	typed     bool   // read from the typed values below, else through vr
	dict      bool   // dictionary-encoded: idx indexes the values below

	idx  []int32
	i32  []int32
	i64  []int64
	f32  []float32
	f64  []float64
	data []byte   // byte arrays: their bytes
	offs []uint32 // BYTE_ARRAY: len(values)+1 offsets into data
	size int      // FIXED_LEN_BYTE_ARRAY: the length of every value
	nd   int      // the number of values (of the dictionary, when dict)

	checked parquet.Dictionary // the dictionary whose offsets were checked
	maxLen  int                // the longest value of checked

	vr   parquet.ValueReader
	vals []parquet.Value
}

// numSource is the typed source of a KindInt or KindFloat column.
type numSource uint8

const (
	numNone numSource = iota
	numI32            // INT32, sign-extended
	numU32            // INT32 annotated unsigned, zero-extended
	numI64
	numF32
	numF64
)

func newFlatReader(col *parquet.Column, pages parquet.Pages, dt snapshot.DataType, conv converter) *flatReader {
	r := &flatReader{col: col, pages: pages, out: KindOf(dt), conv: conv, maxDef: byte(col.MaxDefinitionLevel())}
	p := physicalOf(col)
	r.phys = p.kind
	name := dt.(*snapshot.PrimitiveType).Name
	// The same readings as newConverter's, and only those: any other
	// pairing (which plan refused before) goes through the converter.
	switch r.out {
	case KindInt:
		switch {
		case p.kind == parquet.Int64 && name == "long":
			r.num = numI64
		case p.kind == parquet.Int32 && name == "long" && p.unsigned():
			r.num = numU32
		case p.kind == parquet.Int32:
			r.num = numI32
			switch name {
			case "short":
				r.trunc = 16
			case "byte":
				r.trunc = 8
			}
		}
	case KindFloat:
		switch {
		case p.kind == parquet.Float:
			r.num = numF32
		case p.kind == parquet.Double && name == "double":
			r.num = numF64
		case p.kind == parquet.Int32 && name == "double" && p.decimal == nil && !p.date:
			r.num = numI32
		}
	}
	return r
}

// errFewerValues is the error of a column chunk with fewer values than its
// row group has rows (the words of leafCursor).
func (r *flatReader) errFewerValues() error {
	return fmt.Errorf("column %s has fewer values than the row group has rows", colPath(r.col))
}

// ready makes sure the current page has a row left, reading the next page
// when not, and returns how many it has left.
func (r *flatReader) ready() (int, error) {
	if r.pos < r.rows {
		return r.rows - r.pos, nil
	}
	if err := r.load(); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, r.errFewerValues()
		}
		return 0, err
	}
	return r.rows - r.pos, nil
}

// load reads the next page with rows.
func (r *flatReader) load() error {
	for {
		r.release()
		pg, err := r.pages.ReadPage()
		if err != nil {
			return err
		}
		r.page = pg
		n := int(pg.NumValues())
		if n <= 0 {
			continue
		}
		r.rows, r.pos, r.vi, r.nvals = n, 0, 0, n
		r.defs, r.vr = nil, nil
		if r.maxDef > 0 {
			r.defs = pg.DefinitionLevels()
			if len(r.defs) != n {
				return fmt.Errorf("column %s: a page of %d values has %d definition levels", colPath(r.col), n, len(r.defs))
			}
			r.nvals = bytes.Count(r.defs, []byte{r.maxDef})
		}
		if r.typed, err = r.setTyped(pg); err != nil {
			return fmt.Errorf("column %s: %w", colPath(r.col), err)
		}
		if !r.typed {
			r.vr = pg.Values()
		}
		return nil
	}
}

// kindOfValues maps a physical kind to the kind of parquet-go's typed
// page values.
var kindOfValues = map[parquet.Kind]encoding.Kind{
	parquet.Int32:             encoding.Int32,
	parquet.Int64:             encoding.Int64,
	parquet.Float:             encoding.Float,
	parquet.Double:            encoding.Double,
	parquet.ByteArray:         encoding.ByteArray,
	parquet.FixedLenByteArray: encoding.FixedLenByteArray,
}

// setTyped takes the typed values of page pg when this column reads them;
// false when the page must be read through parquet.Value.
func (r *flatReader) setTyped(pg parquet.Page) (bool, error) {
	switch r.out {
	case KindInt, KindFloat:
		if r.num == numNone {
			return false, nil
		}
	case KindBytes:
	default:
		return false, nil
	}
	src := pg.Data()
	dict := pg.Dictionary()
	r.dict = dict != nil
	if r.dict {
		if src.Kind() != encoding.Int32 {
			return false, nil
		}
		r.idx = src.Int32()
		if len(r.idx) < r.nvals {
			return false, fmt.Errorf("a page holds %d dictionary indexes, its levels say %d values", len(r.idx), r.nvals)
		}
		src = dict.Page().Data()
	}
	if want, ok := kindOfValues[r.phys]; !ok || src.Kind() != want {
		return false, nil
	}
	switch r.phys {
	case parquet.Int32:
		r.i32 = src.Int32()
		r.nd = len(r.i32)
	case parquet.Int64:
		r.i64 = src.Int64()
		r.nd = len(r.i64)
	case parquet.Float:
		r.f32 = src.Float()
		r.nd = len(r.f32)
	case parquet.Double:
		r.f64 = src.Double()
		r.nd = len(r.f64)
	case parquet.ByteArray:
		r.data, r.offs = src.ByteArray()
		r.size, r.nd = 0, max(len(r.offs)-1, 0)
		if !r.dict || dict != r.checked {
			// The vectors alias these offsets: they must be in order and
			// inside the bytes. A dictionary is checked once.
			ml, err := checkOffsets(r.offs, len(r.data))
			if err != nil {
				return false, err
			}
			if r.dict {
				r.checked, r.maxLen = dict, ml
			}
		}
	case parquet.FixedLenByteArray:
		r.data, r.size = src.FixedLenByteArray()
		if r.size <= 0 {
			return false, nil
		}
		r.nd, r.maxLen = len(r.data)/r.size, r.size
	}
	if !r.dict && r.nd < r.nvals {
		return false, fmt.Errorf("a page holds %d values, its levels say %d", r.nd, r.nvals)
	}
	return true, nil
}

// checkOffsets checks byte array offsets into n bytes, and returns the
// longest value.
func checkOffsets(offs []uint32, n int) (int, error) {
	longest := 0
	for i := 1; i < len(offs); i++ {
		a, b := offs[i-1], offs[i]
		if b < a || int64(b) > int64(n) {
			return 0, fmt.Errorf("byte array value %d has offsets %d..%d in %d bytes", i-1, a, b, n)
		}
		longest = max(longest, int(b-a))
	}
	return longest, nil
}

// fit is how many of the next k rows (at least one) a batch can hold for
// this column: the values of a dictionary-encoded byte array column are
// copied, at most maxBatchBytes of them (one value may be larger).
func (r *flatReader) fit(k int) int {
	if !r.typed || !r.dict || r.out != KindBytes || r.maxLen*k <= maxBatchBytes {
		return k
	}
	total, vi := 0, r.vi
	for i := range k {
		if r.defs != nil && r.defs[r.pos+i] != r.maxDef {
			continue
		}
		j := r.idx[vi]
		vi++
		if uint(j) >= uint(r.nd) {
			return i + 1 // fill reports it
		}
		total += r.valueLen(int(j))
		if total > maxBatchBytes && i > 0 {
			return i
		}
	}
	return k
}

func (r *flatReader) valueLen(j int) int {
	if r.size > 0 {
		return r.size
	}
	return int(r.offs[j+1] - r.offs[j])
}

// skip passes over the next m rows of the page.
func (r *flatReader) skip(m int) {
	if r.defs != nil {
		r.vi += bytes.Count(r.defs[r.pos:r.pos+m], []byte{r.maxDef})
	} else {
		r.vi += m
	}
	r.pos += m
}

// fill sets v to the live rows of the next k rows of the page: runs, in
// order, are the live rows' ranges among those k. cb holds v's buffers.
func (r *flatReader) fill(v *Vector, cb *colBuffers, runs []run, k, n int) error {
	if !r.typed {
		return r.fillValues(v, cb, runs, k, n)
	}
	switch r.out {
	case KindBytes:
		return r.fillBytes(v, cb, runs, k, n)
	case KindInt:
		// Without nulls, conversion or deletions, the page's own int64
		// values are the vector.
		if r.num == numI64 && !r.dict && len(runs) == 1 && runs[0].n == k && r.noNulls(k) {
			v.Int = r.i64[r.vi : r.vi+k : r.vi+k]
			r.skip(k)
			return nil
		}
		v.Int = grow(&cb.ints, n)
		return r.fillNumbers(v, cb, runs, k, n)
	default:
		v.Float = grow(&cb.floats, n)
		return r.fillNumbers(v, cb, runs, k, n)
	}
}

// noNulls reports whether the next k rows have no null.
func (r *flatReader) noNulls(k int) bool {
	return r.defs == nil || bytes.Count(r.defs[r.pos:r.pos+k], []byte{r.maxDef}) == k
}

func (r *flatReader) fillNumbers(v *Vector, cb *colBuffers, runs []run, k, n int) error {
	nulls := cb.startNulls(r.defs != nil, n)
	o, cur := 0, 0
	for _, rn := range runs {
		r.skip(rn.at - cur)
		var err error
		if v.Kind == KindInt {
			err = r.numbers(v.Int[o:o+rn.n], nulls, o, rn.n)
		} else {
			err = r.numbersF(v.Float[o:o+rn.n], nulls, o, rn.n)
		}
		if err != nil {
			return err
		}
		o, cur = o+rn.n, rn.at+rn.n
	}
	r.skip(k - cur)
	if r.trunc != 0 {
		truncate(v.Int, r.trunc)
	}
	v.Nulls = cb.endNulls()
	return nil
}

// numbers converts the next m rows into dst (KindInt).
func (r *flatReader) numbers(dst []int64, nulls *nullSet, o, m int) error {
	switch r.num {
	case numI64:
		return readNumbers(r, dst, r.i64, nulls, o, m)
	case numU32:
		return readNumbers(r, dst, unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(r.i32))), len(r.i32)), nulls, o, m)
	default:
		return readNumbers(r, dst, r.i32, nulls, o, m)
	}
}

// numbersF converts the next m rows into dst (KindFloat).
func (r *flatReader) numbersF(dst []float64, nulls *nullSet, o, m int) error {
	switch r.num {
	case numF32:
		return readNumbers(r, dst, r.f32, nulls, o, m)
	case numF64:
		return readNumbers(r, dst, r.f64, nulls, o, m)
	default:
		return readNumbers(r, dst, r.i32, nulls, o, m)
	}
}

type number interface {
	~int32 | ~uint32 | ~int64 | ~float32 | ~float64
}

// readNumbers reads the next m rows of r, whose values are src, into dst
// (m entries), marking nulls at o.
func readNumbers[S, D number](r *flatReader, dst []D, src []S, nulls *nullSet, o, m int) error {
	var defs []byte
	if r.defs != nil {
		defs = r.defs[r.pos : r.pos+m]
		if bytes.Count(defs, []byte{r.maxDef}) == m {
			defs = nil
		}
	}
	vi := r.vi
	switch {
	case r.dict:
		if defs == nil {
			for i, j := range r.idx[vi : vi+m] {
				if uint(j) >= uint(len(src)) {
					return r.errIndex(j)
				}
				dst[i] = D(src[j])
			}
			vi += m
			break
		}
		for i, d := range defs {
			if d != r.maxDef {
				dst[i] = 0
				nulls.set(o + i)
				continue
			}
			j := r.idx[vi]
			if uint(j) >= uint(len(src)) {
				return r.errIndex(j)
			}
			dst[i] = D(src[j])
			vi++
		}
	case defs == nil:
		for i, s := range src[vi : vi+m] {
			dst[i] = D(s)
		}
		vi += m
	default:
		for i, d := range defs {
			if d != r.maxDef {
				dst[i] = 0
				nulls.set(o + i)
				continue
			}
			dst[i] = D(src[vi])
			vi++
		}
	}
	r.vi, r.pos = vi, r.pos+m
	return nil
}

func (r *flatReader) errIndex(j int32) error {
	return fmt.Errorf("column %s: dictionary index %d out of range (the dictionary has %d values)", colPath(r.col), j, r.nd)
}

// truncate makes integers read from INT32 short or byte values, as the
// converter does (int16(v), int8(v)).
func truncate(v []int64, bits int) {
	for i, x := range v {
		if bits == 16 {
			v[i] = int64(int16(x))
		} else {
			v[i] = int64(int8(x))
		}
	}
}

// fillBytes reads byte arrays. Without a dictionary or deletions, Data is
// the page's own bytes; otherwise the live values are copied into cb.
func (r *flatReader) fillBytes(v *Vector, cb *colBuffers, runs []run, k, n int) error {
	alias := !r.dict && len(runs) == 1 && runs[0].n == k
	offs := grow(&cb.offs, n+1)
	nulls := cb.startNulls(r.defs != nil, n)
	var buf []byte
	if alias {
		offs[0] = uint32(r.start(r.vi))
	} else {
		buf = cb.data[:0]
		offs[0] = 0
	}
	o, cur := 0, 0
	for _, rn := range runs {
		r.skip(rn.at - cur)
		for i := range rn.n {
			if r.defs != nil && r.defs[r.pos+i] != r.maxDef {
				nulls.set(o + i)
				offs[o+i+1] = offs[o+i]
				continue
			}
			j := r.vi
			if r.dict {
				j = int(r.idx[r.vi])
				if uint(j) >= uint(r.nd) {
					return r.errIndex(int32(j))
				}
			}
			r.vi++
			if alias {
				offs[o+i+1] = uint32(r.start(j + 1))
				continue
			}
			s := r.start(j)
			buf = append(buf, r.data[s:s+r.valueLen(j)]...)
			offs[o+i+1] = uint32(len(buf))
		}
		r.pos += rn.n
		o, cur = o+rn.n, rn.at+rn.n
	}
	r.skip(k - cur)
	if alias {
		v.Data = r.data
	} else {
		v.Data, cb.data = buf, buf
	}
	v.Offsets = offs
	v.Nulls = cb.endNulls()
	return nil
}

// start is the offset in data of value j (or the end of the last one).
func (r *flatReader) start(j int) int {
	if r.size > 0 {
		return j * r.size
	}
	if j >= len(r.offs) {
		return 0 // a page without values (every row null)
	}
	return int(r.offs[j])
}

// fillValues reads the rows through parquet.Value and the converter, as
// Scan.File does.
func (r *flatReader) fillValues(v *Vector, cb *colBuffers, runs []run, k, n int) error {
	vals := grow(&r.vals, k)
	got, err := readAllValues(r.vr, vals)
	if err != nil {
		return fmt.Errorf("column %s: %w", colPath(r.col), err)
	}
	if got < k {
		return r.errFewerValues()
	}
	cb.start(v, n)
	o := 0
	for _, rn := range runs {
		for _, pv := range vals[rn.at : rn.at+rn.n] {
			var x any
			if pv.DefinitionLevel() >= int(r.maxDef) {
				x = r.conv(pv)
			}
			if err := cb.store(v, o, x); err != nil {
				return fmt.Errorf("column %s: %w", colPath(r.col), err)
			}
			o++
		}
	}
	cb.end(v)
	r.skip(k)
	return nil
}

func (r *flatReader) release() {
	if r.page != nil {
		parquet.Release(r.page)
		r.page = nil
	}
}

func (r *flatReader) close() {
	r.release()
	if r.pages != nil {
		r.pages.Close()
	}
}
