package scan

import "github.com/deltafs/deltafs/snapshot"

// Batch is a run of live rows of one data file, read by
// Scan.FileColumns: their physical row indexes and, for each projected
// column (Scan.Fields order), a Vector of their values. Everything in it
// aliases buffers that are reused, some of them page buffers of the
// Parquet reader: valid only during the callback. Copy what you keep.
type Batch struct {
	// Rows is the physical index in the data file (what deletion vectors
	// index) of each live row of the batch, increasing.
	Rows []int64
	// Cols holds one Vector per projected column, len(Rows) values each.
	Cols []Vector
}

// Kind is how a Vector stores its values: by the column's Delta type,
// the same for every file and batch of a scan.
type Kind uint8

const (
	// KindAny: Any holds each value as Scan.File gives it. The types
	// without a typed form: decimal, date, timestamp, timestamp_ntz,
	// void, struct, array, map.
	KindAny Kind = iota
	// KindInt: long, integer, short and byte, as int64 in Int.
	KindInt
	// KindFloat: float and double, as float64 in Float (every float32
	// is exact in a float64).
	KindFloat
	// KindBytes: string and binary. Value i is Data[Offsets[i]:Offsets[i+1]].
	KindBytes
	// KindBool: boolean, in Bool.
	KindBool
)

func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBytes:
		return "bytes"
	case KindBool:
		return "bool"
	}
	return "any"
}

// KindOf is the Kind of the vectors of a column of Delta type dt.
func KindOf(dt snapshot.DataType) Kind {
	p, ok := dt.(*snapshot.PrimitiveType)
	if !ok {
		return KindAny
	}
	switch p.Name {
	case "long", "integer", "short", "byte":
		return KindInt
	case "float", "double":
		return KindFloat
	case "string", "binary":
		return KindBytes
	case "boolean":
		return KindBool
	}
	return KindAny
}

// Vector holds the values of one column for the rows of a Batch. Only the
// storage of its Kind is set, with one entry per row (Offsets: one more);
// a null's entry is the zero value (an empty range of Data, a nil in Any).
type Vector struct {
	Kind Kind
	// Type is the column's Delta type (which integer or float type a
	// KindInt or KindFloat column has, string or binary for KindBytes).
	Type snapshot.DataType
	// Nulls[i] is set when value i is null (what Scan.File gives as
	// nil); Nulls is nil when no value of the batch is.
	Nulls []bool

	Int     []int64   // KindInt
	Float   []float64 // KindFloat
	Data    []byte    // KindBytes: the bytes of the values
	Offsets []uint32  // KindBytes: len(Rows)+1 offsets into Data, increasing
	Bool    []bool    // KindBool
	Any     []any     // KindAny
}

// IsNull reports whether value i is null.
func (v *Vector) IsNull(i int) bool { return v.Nulls != nil && v.Nulls[i] }

// Bytes is value i of a KindBytes vector (nil for a null), aliasing Data.
func (v *Vector) Bytes(i int) []byte {
	if v.IsNull(i) {
		return nil
	}
	return v.Data[v.Offsets[i]:v.Offsets[i+1]:v.Offsets[i+1]]
}

// Value is value i as Scan.File gives it (boxed: an allocation for most
// values; a binary value aliases Data).
func (v *Vector) Value(i int) any {
	if v.IsNull(i) {
		return nil
	}
	name := ""
	if p, ok := v.Type.(*snapshot.PrimitiveType); ok {
		name = p.Name
	}
	switch v.Kind {
	case KindInt:
		switch name {
		case "integer":
			return int32(v.Int[i])
		case "short":
			return int16(v.Int[i])
		case "byte":
			return int8(v.Int[i])
		}
		return v.Int[i]
	case KindFloat:
		if name == "float" {
			return float32(v.Float[i])
		}
		return v.Float[i]
	case KindBytes:
		if name == "string" {
			return string(v.Bytes(i))
		}
		return v.Bytes(i)
	case KindBool:
		return v.Bool[i]
	}
	return v.Any[i]
}
