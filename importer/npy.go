package importer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// chunkBytes is about how much of a .npy file is read at once. Each chunk
// is a fresh buffer that binary values slice into, so a record's bytes are
// read once and never copied.
const chunkBytes = 1 << 20

// Npy reads a NumPy .npy file (optionally gzip-compressed) record by record.
//
// A structured array gives one column per field and one row per element (a
// multi-dimensional one is read flat, in C order); a plain array of shape
// (N, ...) gives N rows of one column named "data". Types map as:
//
//	bool (b1)                        boolean
//	i1, i2, i4, i8                   byte, short, integer, long
//	u1, u2, u4                       short, integer, long (the next wider signed type)
//	u8                               long; a value above 2^63-1 fails the import
//	f2, f4 / f8                      float / double
//	S<n> (bytes), V<n> (void)        binary (S without its trailing NULs, as NumPy reads it)
//	U<n> (str)                       string (without trailing NULs)
//	uint8 sub-array, any shape       binary of the elements in C order (e.g. pixels (784,))
//
// Other sub-arrays, object, datetime and complex types fail with an error
// naming the field. A field named "id" must be an integer and becomes the
// table's long id column with its values kept; without one, Npy adds an "id"
// column first, which the writer numbers.
type Npy struct {
	path   string
	f      *os.File
	r      *bufio.Reader
	h      *npyHeader
	schema *snapshot.StructType
	conv   []func([]byte) (any, error)
	addID  bool
	read   int64
	chunk  []byte // unread records of the current chunk
}

// OpenNpy opens a .npy or gzip-compressed .npy file and reads its header.
// The file must be a regular file (after following symbolic links): a
// named pipe or a device is refused without being read.
func OpenNpy(path string) (*Npy, error) {
	f, err := storage.OpenLocalFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n, err := newNpy(path, f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

func newNpy(path string, f *os.File) (*Npy, error) {
	r := bufio.NewReaderSize(f, 256<<10)
	if magic, _ := r.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		gz.Multistream(true)
		r = bufio.NewReaderSize(gz, 256<<10)
	}
	h, err := readNpyHeader(r)
	if err != nil {
		return nil, err
	}
	n := &Npy{path: path, f: f, r: r, h: h, schema: &snapshot.StructType{}}
	hasID := false
	for _, fl := range h.fields {
		if fl.name == "id" {
			hasID = true
		}
	}
	if !hasID {
		n.addID = true
		n.schema.Fields = append(n.schema.Fields, snapshot.StructField{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}})
	}
	for _, fl := range h.fields {
		typ, conv, err := fieldColumn(fl)
		if err != nil {
			return nil, err
		}
		if fl.name == "id" && typ != "long" && typ != "integer" && typ != "short" && typ != "byte" {
			return nil, fmt.Errorf("field \"id\" (%s) must be an integer to be the table's id", fl.elem.descr)
		}
		if fl.name == "id" {
			typ = "long"
		}
		n.schema.Fields = append(n.schema.Fields, snapshot.StructField{Name: fl.name, Type: &snapshot.PrimitiveType{Name: typ}})
		off, size := fl.offset, fl.size
		n.conv = append(n.conv, func(rec []byte) (any, error) { return conv(rec[off : off+size]) })
	}
	if err := checkNames(n.schema); err != nil {
		return nil, err
	}
	return n, nil
}

// checkNames refuses names Delta would see as equal (names are
// case-insensitive there).
func checkNames(s *snapshot.StructType) error {
	seen := map[string]string{}
	for _, f := range s.Fields {
		k := strings.ToLower(f.Name)
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("columns %q and %q differ only in case", prev, f.Name)
		}
		seen[k] = f.Name
	}
	return nil
}

// fieldColumn returns the Delta type of a field and the function that
// decodes it from its bytes in a record.
func fieldColumn(f npyField) (string, func([]byte) (any, error), error) {
	e := f.elem
	var order binary.ByteOrder = binary.LittleEndian
	if e.bigEndian {
		order = binary.BigEndian
	}
	if f.shape != nil {
		if e.kind == 'u' && e.size == 1 {
			return "binary", func(b []byte) (any, error) { return b, nil }, nil
		}
		return "", nil, fmt.Errorf("field %q: sub-array %v of %s is not supported (only uint8 sub-arrays, stored as binary)", f.name, f.shape, e.descr)
	}
	switch e.kind {
	case 'b':
		return "boolean", func(b []byte) (any, error) { return b[0] != 0, nil }, nil
	case 'i':
		switch e.size {
		case 1:
			return "byte", func(b []byte) (any, error) { return int8(b[0]), nil }, nil
		case 2:
			return "short", func(b []byte) (any, error) { return int16(order.Uint16(b)), nil }, nil
		case 4:
			return "integer", func(b []byte) (any, error) { return int32(order.Uint32(b)), nil }, nil
		default:
			return "long", func(b []byte) (any, error) { return int64(order.Uint64(b)), nil }, nil
		}
	case 'u':
		switch e.size {
		case 1:
			return "short", func(b []byte) (any, error) { return int16(b[0]), nil }, nil
		case 2:
			return "integer", func(b []byte) (any, error) { return int32(order.Uint16(b)), nil }, nil
		case 4:
			return "long", func(b []byte) (any, error) { return int64(order.Uint32(b)), nil }, nil
		default:
			return "long", func(b []byte) (any, error) {
				v := order.Uint64(b)
				if v > math.MaxInt64 {
					return nil, fmt.Errorf("field %q: uint64 value %d does not fit in a long", f.name, v)
				}
				return int64(v), nil
			}, nil
		}
	case 'f':
		switch e.size {
		case 2:
			return "float", func(b []byte) (any, error) { return halfToFloat32(order.Uint16(b)), nil }, nil
		case 4:
			return "float", func(b []byte) (any, error) { return math.Float32frombits(order.Uint32(b)), nil }, nil
		default:
			return "double", func(b []byte) (any, error) { return math.Float64frombits(order.Uint64(b)), nil }, nil
		}
	case 'S':
		return "binary", func(b []byte) (any, error) { return bytes.TrimRight(b, "\x00"), nil }, nil
	case 'V':
		return "binary", func(b []byte) (any, error) { return b, nil }, nil
	case 'U':
		return "string", func(b []byte) (any, error) {
			out := make([]byte, 0, len(b)/4)
			for i := 0; i+4 <= len(b); i += 4 {
				r := rune(order.Uint32(b[i:]))
				if !utf8.ValidRune(r) {
					return nil, fmt.Errorf("field %q: invalid code point %#x", f.name, uint32(r))
				}
				out = utf8.AppendRune(out, r)
			}
			return string(bytes.TrimRight(out, "\x00")), nil
		}, nil
	}
	return "", nil, fmt.Errorf("field %q: type %s is not supported", f.name, e.descr)
}

// halfToFloat32 converts an IEEE 754 half-precision value.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// Schema is the table schema of the file's records.
func (n *Npy) Schema() *snapshot.StructType { return n.schema }

// IDColumn is "id" when the file has no id field (the writer numbers rows),
// else "".
func (n *Npy) IDColumn() string {
	if n.addID {
		return "id"
	}
	return ""
}

// Records is the number of records the header announces.
func (n *Npy) Records() int64 { return n.h.records }

// Next returns the next record as a row.
func (n *Npy) Next() (writer.Row, error) {
	if n.read == n.h.records {
		return nil, io.EOF
	}
	size := n.h.itemSize
	if len(n.chunk) < size {
		left := n.h.records - n.read
		per := max(chunkBytes/size, 1)
		if int64(per) > left {
			per = int(left)
		}
		n.chunk = make([]byte, per*size)
		if got, err := io.ReadFull(n.r, n.chunk); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%s: truncated: the header announces %d records, the data holds %d", n.path, n.h.records, n.read+int64(got/size))
			}
			return nil, fmt.Errorf("%s: %w", n.path, err)
		}
	}
	rec := n.chunk[:size:size]
	n.chunk = n.chunk[size:]
	row := make(writer.Row, 0, len(n.conv)+1)
	if n.addID {
		row = append(row, nil)
	}
	for _, c := range n.conv {
		v, err := c(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", n.path, n.read, err)
		}
		row = append(row, v)
	}
	n.read++
	return row, nil
}

// Close closes the file.
func (n *Npy) Close() error { return n.f.Close() }
