package writer

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// Row is one row to write: one value per schema field, in schema order.
//
// Values are Go values matching the field's Delta type:
//
//	long, integer, short, byte   any Go integer type, range-checked
//	float, double                float32 or float64
//	boolean                      bool
//	string                       string or []byte (valid UTF-8)
//	binary                       []byte or string
//	date                         time.Time (its calendar date, in its location)
//	timestamp                    time.Time
//
// nil is a null, allowed only in nullable fields. The writer keeps byte
// slices it is given until the data file they go into is written, so a
// source must not reuse them.
type Row []any

// toValue converts v to the Parquet value of column c (levels unset) and
// records it in s.
func (c *column) toValue(v any, s *colStats) (parquet.Value, error) {
	if v == nil {
		if !c.nullable {
			return parquet.Value{}, fmt.Errorf("column %q is not nullable but the value is null", c.name)
		}
		s.nulls++
		return parquet.NullValue(), nil
	}
	switch c.kind {
	case kLong, kInteger, kShort, kByte:
		n, ok := toInt64(v)
		if !ok {
			return parquet.Value{}, c.typeError(v)
		}
		lo, hi := intRange(c.kind)
		if n < lo || n > hi || (n == math.MaxInt64 && isBigUint(v)) {
			return parquet.Value{}, fmt.Errorf("column %q (%s): value %v out of range", c.name, kindName(c.kind), v)
		}
		s.int(n)
		if c.kind == kLong {
			return parquet.Int64Value(n), nil
		}
		return parquet.Int32Value(int32(n)), nil
	case kFloat, kDouble:
		var f float64
		switch x := v.(type) {
		case float32:
			f = float64(x)
		case float64:
			f = x
		default:
			return parquet.Value{}, c.typeError(v)
		}
		s.float(f)
		if c.kind == kFloat {
			return parquet.FloatValue(float32(f)), nil
		}
		return parquet.DoubleValue(f), nil
	case kBoolean:
		b, ok := v.(bool)
		if !ok {
			return parquet.Value{}, c.typeError(v)
		}
		return parquet.BooleanValue(b), nil
	case kString:
		var b []byte
		switch x := v.(type) {
		case string:
			b = []byte(x)
		case []byte:
			b = x
		default:
			return parquet.Value{}, c.typeError(v)
		}
		if !utf8.Valid(b) {
			return parquet.Value{}, fmt.Errorf("column %q (string): value is not valid UTF-8", c.name)
		}
		s.string(b)
		return parquet.ByteArrayValue(b), nil
	case kBinary:
		switch x := v.(type) {
		case []byte:
			return parquet.ByteArrayValue(x), nil
		case string:
			return parquet.ByteArrayValue([]byte(x)), nil
		}
		return parquet.Value{}, c.typeError(v)
	case kDate:
		t, ok := v.(time.Time)
		if !ok {
			return parquet.Value{}, c.typeError(v)
		}
		y, m, d := t.Date()
		days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
		if days < math.MinInt32 || days > math.MaxInt32 {
			return parquet.Value{}, fmt.Errorf("column %q (date): %v out of range", c.name, t)
		}
		s.int(days)
		return parquet.Int32Value(int32(days)), nil
	case kTimestamp:
		t, ok := v.(time.Time)
		if !ok {
			return parquet.Value{}, c.typeError(v)
		}
		us := t.UnixMicro()
		s.int(us)
		return parquet.Int64Value(us), nil
	}
	return parquet.Value{}, fmt.Errorf("column %q: unsupported kind %d", c.name, c.kind)
}

func (c *column) typeError(v any) error {
	return fmt.Errorf("column %q (%s): cannot write a Go %T", c.name, kindName(c.kind), v)
}

// valueSize estimates the bytes a value adds to a data file, before
// compression, for MaxFileBytes.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case []byte:
		return int64(len(x)) + 4
	case string:
		return int64(len(x)) + 4
	}
	return 8
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) > math.MaxInt64 {
			return math.MaxInt64, true // flagged by isBigUint
		}
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(x), true
	}
	return 0, false
}

// isBigUint reports an unsigned value above math.MaxInt64 (which toInt64
// clamps).
func isBigUint(v any) bool {
	switch x := v.(type) {
	case uint:
		return uint64(x) > math.MaxInt64
	case uint64:
		return x > math.MaxInt64
	}
	return false
}

func intRange(k kind) (lo, hi int64) {
	switch k {
	case kInteger:
		return math.MinInt32, math.MaxInt32
	case kShort:
		return math.MinInt16, math.MaxInt16
	case kByte:
		return math.MinInt8, math.MaxInt8
	}
	return math.MinInt64, math.MaxInt64
}

func kindName(k kind) string {
	for name, kk := range kindByName {
		if kk == k {
			return name
		}
	}
	return "?"
}
