package snapshot

import (
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go/encoding/thrift"
)

// Checking a Parquet footer before parquet-go decodes it. The footer is a
// Thrift compact struct, and parquet-go's decoder allocates every list at
// the length the list claims, before reading any element: a footer of 20
// bytes that claims a list of 2^30 structs makes the Go runtime fail with
// "out of memory", which no recover catches. This walk reads the footer
// with parquet-go's own Thrift reader, allocating nothing, and refuses a
// list, set, map or string that claims more elements or bytes than are
// left (every element takes at least one byte), or nesting deeper than
// any Parquet footer has.

// maxThriftDepth bounds struct and container nesting (a footer nests a few
// levels; schemas are flattened into a list).
const maxThriftDepth = 64

// checkFooterSizes checks every size claimed in a Thrift compact struct
// against the bytes of footer.
func checkFooterSizes(footer []byte) error {
	var proto thrift.CompactProtocol
	r := proto.NewReaderFromBytes(footer)
	w := thriftWalk{r: r, total: len(footer)}
	if err := w.structure(0); err != nil {
		return corruptf("Parquet footer: %v", err)
	}
	return nil
}

type thriftWalk struct {
	r     thrift.BytesReader
	total int
}

func (w thriftWalk) left() int { return w.total - w.r.BytesRead() }

func (w thriftWalk) structure(depth int) error {
	if depth > maxThriftDepth {
		return errors.New("nested too deeply")
	}
	for {
		f, err := w.r.ReadField()
		if err != nil {
			return err
		}
		if f.Type == thrift.STOP {
			return nil
		}
		if err := w.value(f.Type, true, depth+1); err != nil {
			return err
		}
	}
}

// value skips one value of type t; inField is true for a struct field,
// whose boolean value the compact protocol keeps in the field header.
func (w thriftWalk) value(t thrift.Type, inField bool, depth int) error {
	if depth > maxThriftDepth {
		return errors.New("nested too deeply")
	}
	var err error
	switch t {
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
		_, err = w.r.ReadBytes() // bounds-checked, no allocation
	case thrift.LIST, thrift.SET:
		var l thrift.List
		if l, err = w.r.ReadList(); err != nil {
			return err
		}
		if int(l.Size) < 0 || int(l.Size) > w.left() {
			return fmt.Errorf("a list claims %d elements in %d bytes", l.Size, w.left())
		}
		for i := 0; i < int(l.Size) && err == nil; i++ {
			err = w.value(l.Type, false, depth+1)
		}
	case thrift.MAP:
		var m thrift.Map
		if m, err = w.r.ReadMap(); err != nil {
			return err
		}
		if int(m.Size) < 0 || int(m.Size) > w.left()/2 {
			return fmt.Errorf("a map claims %d entries in %d bytes", m.Size, w.left())
		}
		for i := 0; i < int(m.Size) && err == nil; i++ {
			if err = w.value(m.Key, false, depth+1); err == nil {
				err = w.value(m.Value, false, depth+1)
			}
		}
	case thrift.STRUCT:
		err = w.structure(depth)
	default:
		err = fmt.Errorf("unknown Thrift type %d", t)
	}
	return err
}
