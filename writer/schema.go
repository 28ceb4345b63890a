package writer

import (
	"fmt"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/deltafs/deltafs/snapshot"
)

// kind is a Delta primitive type this package writes.
type kind int

const (
	kLong kind = iota
	kInteger
	kShort
	kByte
	kFloat
	kDouble
	kBoolean
	kString
	kBinary
	kDate
	kTimestamp
)

var kindByName = map[string]kind{
	"long": kLong, "integer": kInteger, "short": kShort, "byte": kByte,
	"float": kFloat, "double": kDouble, "boolean": kBoolean,
	"string": kString, "binary": kBinary, "date": kDate, "timestamp": kTimestamp,
}

// column is one top-level field of the schema being written.
type column struct {
	name     string
	kind     kind
	nullable bool
	index    int // leaf index in the Parquet schema
}

// columns checks that every field of schema is a primitive type this package
// writes, with a unique name, and returns them in schema order.
func columns(schema *snapshot.StructType) ([]column, error) {
	if schema == nil || len(schema.Fields) == 0 {
		return nil, fmt.Errorf("schema has no fields")
	}
	seen := map[string]bool{}
	cols := make([]column, len(schema.Fields))
	for i, f := range schema.Fields {
		if f.Name == "" {
			return nil, fmt.Errorf("field %d has no name", i)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("field %q appears twice", f.Name)
		}
		seen[f.Name] = true
		p, ok := f.Type.(*snapshot.PrimitiveType)
		if !ok {
			return nil, fmt.Errorf("field %q: type %s is not supported (only primitive types)", f.Name, f.Type)
		}
		k, ok := kindByName[p.Name]
		if !ok {
			return nil, fmt.Errorf("field %q: type %s is not supported", f.Name, p.Name)
		}
		cols[i] = column{name: f.Name, kind: k, nullable: f.Nullable, index: i}
	}
	return cols, nil
}

// parquetSchema is the Parquet schema of the data files: one leaf per column,
// in schema order (parquet.Group would sort them by name).
func parquetSchema(cols []column) *parquet.Schema {
	g := make(orderedGroup, len(cols))
	for i, c := range cols {
		var n parquet.Node
		switch c.kind {
		case kLong:
			n = parquet.Leaf(parquet.Int64Type)
		case kInteger:
			n = parquet.Leaf(parquet.Int32Type)
		case kShort:
			n = parquet.Int(16)
		case kByte:
			n = parquet.Int(8)
		case kFloat:
			n = parquet.Leaf(parquet.FloatType)
		case kDouble:
			n = parquet.Leaf(parquet.DoubleType)
		case kBoolean:
			n = parquet.Leaf(parquet.BooleanType)
		case kString:
			n = parquet.String()
		case kBinary:
			n = parquet.Leaf(parquet.ByteArrayType)
		case kDate:
			n = parquet.Date()
		case kTimestamp:
			n = parquet.Timestamp(parquet.Microsecond)
		}
		if c.nullable {
			n = parquet.Optional(n)
		} else {
			n = parquet.Required(n)
		}
		g[i] = field{Node: n, name: c.name}
	}
	return parquet.NewSchema("spark_schema", g)
}

// orderedGroup is a Parquet group whose fields keep the order given.
type orderedGroup []field

type field struct {
	parquet.Node
	name string
}

func (f field) Name() string { return f.name }

func (f field) Value(base reflect.Value) reflect.Value {
	panic("writer: orderedGroup does not map Go values")
}

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return fmt.Sprintf("group(%d fields)", len(g)) }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }

func (g orderedGroup) Fields() []parquet.Field {
	out := make([]parquet.Field, len(g))
	for i := range g {
		out[i] = g[i]
	}
	return out
}

// GoType is the struct of parquet.Group with the same fields. The writer
// never maps Go structs onto this schema; parquet-go only asks for it.
func (g orderedGroup) GoType() reflect.Type {
	m := make(parquet.Group, len(g))
	for _, f := range g {
		m[f.name] = f.Node
	}
	return m.GoType()
}

// sameSchema reports whether two schemas have the same field names and types
// in the same order (nullability and metadata aside).
func sameSchema(a, b *snapshot.StructType) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || a.Fields[i].Type.String() != b.Fields[i].Type.String() {
			return false
		}
	}
	return true
}
