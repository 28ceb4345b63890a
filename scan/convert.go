package scan

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/snapshot"
)

// A converter turns one non-null Parquet value of a leaf column into the Go
// value of the column's Delta type (see the package documentation),
// widening it when the file holds a narrower type than the table.
type converter func(v parquet.Value) any

// physical describes a Parquet leaf column: its physical kind and the
// parts of its logical type a converter needs.
type physical struct {
	kind      parquet.Kind
	decimal   *format.DecimalType   // DECIMAL annotation
	timestamp *format.TimestampType // TIMESTAMP annotation
	date      bool                  // DATE annotation
	intType   *format.IntType       // INT(bits, signed) annotation
	logical   string                // the annotation, for messages
}

func physicalOf(col *parquet.Column) physical {
	t := col.Type()
	p := physical{kind: t.Kind()}
	if lt := t.LogicalType(); lt != nil {
		p.logical = lt.String()
		switch v := lt.Value.(type) {
		case *format.DecimalType:
			p.decimal = v
		case *format.TimestampType:
			p.timestamp = v
		case *format.DateType:
			p.date = true
		case *format.IntType:
			p.intType = v
		}
	}
	return p
}

func (p physical) String() string {
	if p.logical != "" {
		return p.kind.String() + " (" + p.logical + ")"
	}
	return p.kind.String()
}

// unsigned reports an unsigned integer annotation.
func (p physical) unsigned() bool { return p.intType != nil && !p.intType.IsSigned }

// newConverter chooses the converter reading a column of physical type p
// as Delta type dt: the exact reading, or a widening the Type Widening
// feature allows (integer widening, float or integer to double, date to
// timestamp_ntz, decimal widening, integer to decimal).
func newConverter(dt *snapshot.PrimitiveType, p physical) (converter, error) {
	k := p.kind
	bad := func() (converter, error) {
		return nil, fmt.Errorf("cannot read Parquet %s as %s", p, dt.Name)
	}
	if prec, scale, ok := dt.Decimal(); ok {
		return decimalConverter(prec, scale, p)
	}
	switch dt.Name {
	case "string":
		if k == parquet.ByteArray || k == parquet.FixedLenByteArray {
			return func(v parquet.Value) any { return string(v.ByteArray()) }, nil
		}
	case "binary":
		if k == parquet.ByteArray || k == parquet.FixedLenByteArray {
			return func(v parquet.Value) any { return v.ByteArray() }, nil
		}
	case "boolean":
		if k == parquet.Boolean {
			return func(v parquet.Value) any { return v.Boolean() }, nil
		}
	case "long":
		switch {
		case k == parquet.Int64:
			return func(v parquet.Value) any { return v.Int64() }, nil
		case k == parquet.Int32 && p.unsigned():
			return func(v parquet.Value) any { return int64(uint32(v.Int32())) }, nil
		case k == parquet.Int32:
			return func(v parquet.Value) any { return int64(v.Int32()) }, nil
		}
	case "integer":
		if k == parquet.Int32 {
			return func(v parquet.Value) any { return v.Int32() }, nil
		}
	case "short":
		if k == parquet.Int32 {
			return func(v parquet.Value) any { return int16(v.Int32()) }, nil
		}
	case "byte":
		if k == parquet.Int32 {
			return func(v parquet.Value) any { return int8(v.Int32()) }, nil
		}
	case "float":
		if k == parquet.Float {
			return func(v parquet.Value) any { return v.Float() }, nil
		}
	case "double":
		switch {
		case k == parquet.Double:
			return func(v parquet.Value) any { return v.Double() }, nil
		case k == parquet.Float:
			return func(v parquet.Value) any { return float64(v.Float()) }, nil
		case k == parquet.Int32 && p.decimal == nil && !p.date:
			return func(v parquet.Value) any { return float64(v.Int32()) }, nil
		}
	case "date":
		if k == parquet.Int32 {
			return func(v parquet.Value) any { return dateFromDays(int64(v.Int32())) }, nil
		}
	case "timestamp", "timestamp_ntz":
		switch {
		case k == parquet.Int96:
			return func(v parquet.Value) any { return timeFromInt96(v) }, nil
		case k == parquet.Int64:
			unit := time.Microsecond
			if p.timestamp != nil && p.timestamp.Unit.Value != nil {
				unit = p.timestamp.Unit.Value.Duration()
			}
			switch unit {
			case time.Millisecond:
				return func(v parquet.Value) any { return time.UnixMilli(v.Int64()).UTC() }, nil
			case time.Nanosecond:
				return func(v parquet.Value) any { return time.Unix(0, v.Int64()).UTC() }, nil
			default:
				return func(v parquet.Value) any { return time.UnixMicro(v.Int64()).UTC() }, nil
			}
		case k == parquet.Int32 && p.date && dt.Name == "timestamp_ntz":
			return func(v parquet.Value) any { return dateFromDays(int64(v.Int32())) }, nil
		}
	case "void":
		return func(parquet.Value) any { return nil }, nil
	default:
		return nil, fmt.Errorf("type %s is not supported", dt.Name)
	}
	return bad()
}

// decimalConverter reads decimal(prec, scale) from a Parquet decimal of a
// smaller or equal scale, or from an integer column (widening).
func decimalConverter(prec, scale int, p physical) (converter, error) {
	from := 0 // the file's scale
	switch {
	case p.decimal != nil:
		from = int(p.decimal.Scale)
		if from > scale {
			return nil, fmt.Errorf("cannot read Parquet %s as decimal(%d,%d)", p, prec, scale)
		}
	case p.kind == parquet.Int32 || p.kind == parquet.Int64:
		// byte, short, int or long widened to a decimal.
		if p.date || p.timestamp != nil {
			return nil, fmt.Errorf("cannot read Parquet %s as decimal(%d,%d)", p, prec, scale)
		}
	default:
		return nil, fmt.Errorf("cannot read Parquet %s as decimal(%d,%d)", p, prec, scale)
	}
	fix := func(d Decimal) any { return d.Rescale(scale) }
	if from == scale {
		fix = func(d Decimal) any { return d }
	}
	switch p.kind {
	case parquet.Int32:
		return func(v parquet.Value) any { return fix(DecimalFromInt64(int64(v.Int32()), from)) }, nil
	case parquet.Int64:
		return func(v parquet.Value) any { return fix(DecimalFromInt64(v.Int64(), from)) }, nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return func(v parquet.Value) any { return fix(decimalFromBytes(v.ByteArray(), from)) }, nil
	}
	return nil, fmt.Errorf("cannot read Parquet %s as decimal(%d,%d)", p, prec, scale)
}

// decimalFromBytes reads a big-endian two's complement unscaled value.
func decimalFromBytes(b []byte, scale int) Decimal {
	if len(b) <= 8 {
		var v int64
		if len(b) > 0 && b[0]&0x80 != 0 {
			v = -1
		}
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		return DecimalFromInt64(v, scale)
	}
	u := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return NewDecimal(u, scale)
}

// dateFromDays is midnight UTC of the day that many days after 1970-01-01.
func dateFromDays(days int64) time.Time {
	return time.Unix(days*86400, 0).UTC()
}

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// timeFromInt96 reads an INT96 timestamp (old Spark and Impala): eight
// little-endian bytes of nanoseconds in the day, then four of Julian day.
func timeFromInt96(v parquet.Value) time.Time {
	i := v.Int96()
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], i[0])
	binary.LittleEndian.PutUint32(b[4:], i[1])
	binary.LittleEndian.PutUint32(b[8:], i[2])
	nanos := int64(binary.LittleEndian.Uint64(b[0:8]))
	days := int64(int32(binary.LittleEndian.Uint32(b[8:12]))) - julianUnixEpoch
	return time.Unix(days*86400, nanos).UTC()
}
