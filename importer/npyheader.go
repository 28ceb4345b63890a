package importer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// npyHeader is the parsed header of a .npy file.
type npyHeader struct {
	fields     []npyField // one per column; a plain array has one named "data"
	structured bool
	records    int64 // rows: shape[0] (1 for a 0-d array)
	itemSize   int   // bytes of one row
}

// npyField is one field of a record.
type npyField struct {
	name   string
	offset int    // in the record
	size   int    // bytes of the whole field (elements x count)
	elem   npyDim // element type
	count  int    // elements: product of the sub-array shape (1 for a scalar)
	shape  []int64
}

// npyDim is a NumPy scalar type from a descr string like "<u2".
type npyDim struct {
	descr     string
	kind      byte // b bool, i signed, u unsigned, f float, S bytes, U unicode, V void
	size      int
	bigEndian bool
}

var descrRE = regexp.MustCompile(`^([<>|=]?)([a-zA-Z?])(\d*)$`)

// parseDescr parses one NumPy type string in the canonical form .npy
// headers use: byte order, kind letter, size in bytes ("<i8", "|u1", "|b1",
// "<f4", "|S10", "<U5" where U counts characters).
func parseDescr(s string) (npyDim, error) {
	m := descrRE.FindStringSubmatch(s)
	if m == nil {
		return npyDim{}, fmt.Errorf("type %q is not supported (numbers, bool, bytes and str only)", s)
	}
	d := npyDim{descr: s, bigEndian: m[1] == ">", kind: m[2][0]}
	n := 0
	if m[3] != "" {
		var err error
		if n, err = strconv.Atoi(m[3]); err != nil || n > 1<<24 {
			return npyDim{}, fmt.Errorf("type %q: bad size", s)
		}
	}
	d.size = n
	switch d.kind {
	case '?':
		d.kind, d.size = 'b', 1
	case 'b':
		if n != 1 {
			return npyDim{}, fmt.Errorf("type %q: booleans of %d bytes are not supported", s, n)
		}
	case 'i', 'u':
		if n != 1 && n != 2 && n != 4 && n != 8 {
			return npyDim{}, fmt.Errorf("type %q: integers of %d bytes are not supported", s, n)
		}
	case 'f':
		if n != 2 && n != 4 && n != 8 {
			return npyDim{}, fmt.Errorf("type %q: floats of %d bytes are not supported", s, n)
		}
	case 'S', 'a', 'V':
		if d.kind == 'a' {
			d.kind = 'S'
		}
	case 'U':
		d.size = 4 * n
	default:
		return npyDim{}, fmt.Errorf("type %q is not supported (numbers, bool, bytes and str only)", s)
	}
	return d, nil
}

// readNpyHeader reads the magic, version and header of a .npy stream,
// leaving r at the first record.
func readNpyHeader(r *bufio.Reader) (*npyHeader, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("not a .npy file: too short")
	}
	if string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("not a .npy file: bad magic")
	}
	var hlen int
	switch major := pre[6]; major {
	case 1:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("npy header: truncated")
		}
		hlen = int(binary.LittleEndian.Uint16(b))
	case 2, 3:
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("npy header: truncated")
		}
		hlen = int(binary.LittleEndian.Uint32(b))
	default:
		return nil, fmt.Errorf("npy format version %d.%d is not supported", pre[6], pre[7])
	}
	if hlen > 1<<20 {
		return nil, fmt.Errorf("npy header: %d bytes is implausibly long", hlen)
	}
	text := make([]byte, hlen)
	if _, err := io.ReadFull(r, text); err != nil {
		return nil, fmt.Errorf("npy header: truncated (%d bytes announced)", hlen)
	}
	h, err := parseNpyHeader(string(text))
	if err != nil {
		return nil, fmt.Errorf("npy header: %w", err)
	}
	return h, nil
}

// parseNpyHeader interprets the header dict.
func parseNpyHeader(text string) (*npyHeader, error) {
	v, err := parsePyLiteral(strings.TrimRight(text, " \n\x00"))
	if err != nil {
		return nil, err
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a dict")
	}
	if fo, ok := d["fortran_order"].(bool); !ok {
		return nil, fmt.Errorf("fortran_order missing")
	} else if fo {
		return nil, fmt.Errorf("fortran_order True is not supported (save a C-ordered array)")
	}
	shapeV, ok := d["shape"].([]any)
	if !ok {
		return nil, fmt.Errorf("shape missing or not a tuple")
	}
	shape, err := intTuple(shapeV)
	if err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	h := &npyHeader{records: 1}
	if len(shape) > 0 {
		h.records = shape[0]
	}
	switch descr := d["descr"].(type) {
	case string:
		// A plain array: each row is shape[1:] elements of one type.
		dim, err := parseDescr(descr)
		if err != nil {
			return nil, fmt.Errorf("descr: %w", err)
		}
		f := npyField{name: "data", elem: dim, count: 1}
		if len(shape) > 1 {
			f.shape = shape[1:]
		}
		if f.count, err = product(f.shape); err != nil {
			return nil, err
		}
		f.size = f.count * dim.size
		h.fields, h.itemSize = []npyField{f}, f.size
	case []any:
		// Every element of a structured array is a row, whatever its shape.
		h.structured = true
		h.records = 1
		for _, n := range shape {
			if n != 0 && h.records > (1<<62)/n {
				return nil, fmt.Errorf("shape %v is too large", shape)
			}
			h.records *= n
		}
		off := 0
		for i, fv := range descr {
			f, err := parseField(fv)
			if err != nil {
				return nil, fmt.Errorf("descr field %d: %w", i, err)
			}
			f.offset = off
			off += f.size
			if f.name == "" && f.elem.kind == 'V' {
				continue // padding
			}
			h.fields = append(h.fields, f)
		}
		h.itemSize = off
	default:
		return nil, fmt.Errorf("descr missing or not a type")
	}
	if h.records < 0 {
		return nil, fmt.Errorf("shape has a negative length")
	}
	if h.itemSize == 0 {
		return nil, fmt.Errorf("records of 0 bytes")
	}
	seen := map[string]bool{}
	for _, f := range h.fields {
		if seen[f.name] {
			return nil, fmt.Errorf("field %q appears twice", f.name)
		}
		seen[f.name] = true
	}
	return h, nil
}

// parseField parses one (name, type[, shape]) tuple of a structured descr.
func parseField(v any) (npyField, error) {
	t, ok := v.([]any)
	if !ok || len(t) < 2 || len(t) > 3 {
		return npyField{}, fmt.Errorf("not a (name, type[, shape]) tuple")
	}
	name, ok := t[0].(string)
	if !ok {
		return npyField{}, fmt.Errorf("field name %v is not a string (titled fields are not supported)", t[0])
	}
	ts, ok := t[1].(string)
	if !ok {
		return npyField{}, fmt.Errorf("field %q: nested structured types are not supported", name)
	}
	dim, err := parseDescr(ts)
	if err != nil {
		return npyField{}, fmt.Errorf("field %q: %w", name, err)
	}
	f := npyField{name: name, elem: dim, count: 1}
	if len(t) == 3 {
		sv, ok := t[2].([]any)
		if !ok {
			if n, isInt := t[2].(int64); isInt {
				sv = []any{n}
			} else {
				return npyField{}, fmt.Errorf("field %q: shape is not a tuple", name)
			}
		}
		if f.shape, err = intTuple(sv); err != nil {
			return npyField{}, fmt.Errorf("field %q: shape: %w", name, err)
		}
		if f.count, err = product(f.shape); err != nil {
			return npyField{}, fmt.Errorf("field %q: %w", name, err)
		}
	}
	f.size = f.count * dim.size
	return f, nil
}

func intTuple(v []any) ([]int64, error) {
	out := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok || n < 0 {
			return nil, fmt.Errorf("%v is not a dimension", x)
		}
		out[i] = n
	}
	return out, nil
}

func product(shape []int64) (int, error) {
	p := int64(1)
	for _, n := range shape {
		if n != 0 && p > (1<<31)/n {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		p *= n
	}
	return int(p), nil
}
