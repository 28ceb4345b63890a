package pqcheck

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go/encoding/thrift"
)

// Walking a Thrift compact struct without decoding it. parquet-go's Thrift
// decoder allocates every list at the length it claims and every string at
// the length it claims, before reading a byte of them. The walk reads the
// same bytes with parquet-go's own compact reader, which allocates
// nothing, and refuses:
//
//   - a list, set, map or string that claims more elements or bytes than
//     are left (every element takes at least one byte);
//   - nesting deeper than maxDepth;
//   - a structure whose decoded form would take more than MaxDecodeBytes.
//
// The last rule needs the Go types the struct decodes into: a list of
// 100,000 empty structs takes 100 KB of Thrift but 56 MB as
// []format.ColumnChunk. The walk follows the parquet-go format type it is
// given (the `thrift:"N"` field tags, thrift.Null, thrift.Slice and
// unions, as parquet-go's decoder reads them) and adds up what the decoder
// would allocate: each list's backing array, each string, each union
// member. Fields the type does not know are walked all the same (bounded
// by the bytes), and count as their bytes.

// maxDepth bounds struct and container nesting (a footer nests a few
// levels: file, row group, column chunk, metadata, statistics; schemas are
// flattened into a list).
const maxDepth = 64

// walker walks one Thrift value in a byte slice.
type walker struct {
	r      thrift.BytesReader
	total  int
	alloc  int64 // bytes the decoder would allocate so far
	budget int64
}

// walkThrift walks the Thrift compact struct at the start of b, which
// decodes into a value of type t, and returns the bytes it takes.
func walkThrift(b []byte, t reflect.Type, budget int64) (int, error) {
	var proto thrift.CompactProtocol
	w := &walker{r: proto.NewReaderFromBytes(b), total: len(b), budget: budget}
	if err := w.structure(t, 0); err != nil {
		return 0, err
	}
	return w.r.BytesRead(), nil
}

func (w *walker) left() int { return w.total - w.r.BytesRead() }

// charge adds n bytes the decoder would allocate.
func (w *walker) charge(n int64) error {
	w.alloc += n
	if w.alloc > w.budget {
		return fmt.Errorf("decodes to more than %d MiB", w.budget>>20)
	}
	return nil
}

func (w *walker) structure(t reflect.Type, depth int) error {
	if depth > maxDepth {
		return errors.New("nested too deeply")
	}
	sh := shapeOf(t)
	last := int16(0)
	for {
		f, err := w.r.ReadField()
		if err != nil {
			return err
		}
		if f.Type == thrift.STOP {
			return nil
		}
		if f.Delta { // the compact protocol's short form: an id delta
			f.ID += last
		}
		last = f.ID
		var ft reflect.Type
		if sh != nil {
			ft = sh.fields[f.ID]
			if sh.union && ft != nil {
				// The decoder allocates the member it finds.
				if err := w.charge(int64(ft.Size())); err != nil {
					return err
				}
			}
		}
		if err := w.value(f.Type, ft, fieldName(sh, f.ID), true, depth+1); err != nil {
			return err
		}
	}
}

// value walks one value of Thrift type tt decoding into Go type gt (nil:
// unknown). inField is true for a struct field, whose boolean value the
// compact protocol keeps in the field header.
func (w *walker) value(tt thrift.Type, gt reflect.Type, name string, inField bool, depth int) error {
	if depth > maxDepth {
		return errors.New("nested too deeply")
	}
	if gt != nil && gt.Kind() == reflect.Pointer {
		if err := w.charge(int64(gt.Elem().Size())); err != nil {
			return err
		}
	}
	gt = unwrap(gt)
	var err error
	switch tt {
	case thrift.TRUE, thrift.FALSE:
		if !inField {
			_, err = w.r.ReadBool()
		}
	case thrift.I8:
		_, err = w.r.ReadInt8()
	case thrift.I16:
		_, err = w.r.ReadInt16()
	case thrift.I32:
		_, err = w.r.ReadInt32()
	case thrift.I64:
		_, err = w.r.ReadInt64()
	case thrift.DOUBLE:
		_, err = w.r.ReadFloat64()
	case thrift.UUID:
		if _, err = w.r.ReadFloat64(); err == nil {
			_, err = w.r.ReadFloat64()
		}
	case thrift.BINARY:
		var b []byte
		if b, err = w.r.ReadBytes(); err == nil { // bounds-checked, no allocation
			err = w.charge(int64(len(b)))
		}
	case thrift.LIST, thrift.SET:
		var l thrift.List
		if l, err = w.r.ReadList(); err != nil {
			return err
		}
		if int(l.Size) < 0 || int(l.Size) > w.left() {
			return fmt.Errorf("%sa list claims %d elements in %d bytes", name, l.Size, w.left())
		}
		var elem reflect.Type
		if gt != nil && gt.Kind() == reflect.Slice {
			elem = gt.Elem()
			if err := w.charge(int64(l.Size) * int64(elem.Size())); err != nil {
				return fmt.Errorf("%sa list of %d elements %v", name, l.Size, err)
			}
		}
		for i := 0; i < int(l.Size) && err == nil; i++ {
			err = w.value(l.Type, elem, name, false, depth+1)
		}
	case thrift.MAP:
		var m thrift.Map
		if m, err = w.r.ReadMap(); err != nil {
			return err
		}
		if int(m.Size) < 0 || int(m.Size) > w.left()/2 {
			return fmt.Errorf("%sa map claims %d entries in %d bytes", name, m.Size, w.left())
		}
		for i := 0; i < int(m.Size) && err == nil; i++ {
			if err = w.value(m.Key, nil, name, false, depth+1); err == nil {
				err = w.value(m.Value, nil, name, false, depth+1)
			}
		}
	case thrift.STRUCT:
		if gt != nil && gt.Kind() != reflect.Struct {
			gt = nil
		}
		err = w.structure(gt, depth)
	default:
		err = fmt.Errorf("unknown Thrift type %d", tt)
	}
	return err
}

// shape is what the walk needs of a Go struct type: the type of each
// Thrift field id; for a union, the member type of each id.
type shape struct {
	fields map[int16]reflect.Type
	names  map[int16]string
	union  bool
}

var shapes sync.Map // reflect.Type -> *shape

var unionType = reflect.TypeFor[thrift.Union]()

func shapeOf(t reflect.Type) *shape {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := &shape{fields: map[int16]reflect.Type{}, names: map[int16]string{}}
	if reflect.PointerTo(t).Implements(unionType) {
		s.union = true
		for _, m := range reflect.New(t).Interface().(thrift.Union).UnionMembers() {
			mt := reflect.TypeOf(m).Elem()
			s.fields[m.FieldID()], s.names[m.FieldID()] = mt, mt.Name()
		}
	} else {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("thrift"), ",")
			if id, err := strconv.ParseInt(tag, 10, 16); err == nil && f.IsExported() {
				s.fields[int16(id)], s.names[int16(id)] = f.Type, f.Name
			}
		}
	}
	actual, _ := shapes.LoadOrStore(t, s)
	return actual.(*shape)
}

// fieldName names field id of a struct for messages ("RowGroups: ").
func fieldName(s *shape, id int16) string {
	if s != nil {
		if n := s.names[id]; n != "" {
			return n + ": "
		}
	}
	return ""
}

var thriftPkg = reflect.TypeFor[thrift.List]().PkgPath()

// unwrap returns the type the decoder fills for gt: thrift.Null[T] holds
// a T inline, a pointer points to one (which value charges for).
func unwrap(gt reflect.Type) reflect.Type {
	for gt != nil {
		switch {
		case gt.Kind() == reflect.Pointer:
			gt = gt.Elem()
		case gt.Kind() == reflect.Struct && gt.PkgPath() == thriftPkg && strings.HasPrefix(gt.Name(), "Null["):
			gt = gt.Field(0).Type
		default:
			return gt
		}
	}
	return nil
}
