package filter

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/deltafs/deltafs/scan"
)

// kind is how a column's values compare, by its Delta type.
type kind uint8

const (
	kInt   kind = iota // long, integer, short, byte: int64
	kFloat             // float, double: float64 (NaN greatest, equal to itself)
	kDec               // decimal(p,s): *big.Rat
	kBytes             // string, binary: bytes, compared bytewise (code point order for UTF-8)
	kBool              // boolean: false < true
	kTime              // date, timestamp, timestamp_ntz: microseconds since the epoch (UTC, wall clock for ntz)
)

// value is one non-null value of a kind. A kInt literal that is not an
// integer in int64's range keeps it in r instead (compared exactly).
type value struct {
	i int64
	f float64
	r *big.Rat
	b []byte
	t bool
}

// compare orders a column value a and a value b of the same kind.
func compare(k kind, a, b value) int {
	switch k {
	case kInt:
		if b.r != nil {
			return new(big.Rat).SetInt64(a.i).Cmp(b.r)
		}
		if a.r != nil { // only literals hold r; a stats bound never does
			return a.r.Cmp(new(big.Rat).SetInt64(b.i))
		}
		return cmpInt(a.i, b.i)
	case kTime:
		return cmpInt(a.i, b.i)
	case kFloat:
		return cmpFloat(a.f, b.f)
	case kDec:
		return a.r.Cmp(b.r)
	case kBytes:
		return bytes.Compare(a.b, b.b)
	case kBool:
		switch {
		case a.t == b.t:
			return 0
		case b.t:
			return -1
		}
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders floats as Spark and DuckDB do: NaN equals NaN and is
// greater than every other value; -0.0 equals 0.0.
func cmpFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cell is value i of a vector of kind k; ok is false for a null.
func cell(k kind, v *scan.Vector, i int) (value, bool) {
	if v.IsNull(i) {
		return value{}, false
	}
	switch v.Kind {
	case scan.KindInt:
		return value{i: v.Int[i]}, true
	case scan.KindFloat:
		return value{f: v.Float[i]}, true
	case scan.KindBytes:
		return value{b: v.Bytes(i)}, true
	case scan.KindBool:
		return value{t: v.Bool[i]}, true
	}
	return fromGo(k, v.Any[i])
}

// fromGo is a Go value as package scan gives it (see scan's doc) as a
// value of kind k; ok is false for a null or a value of another type.
func fromGo(k kind, x any) (value, bool) {
	switch x := x.(type) {
	case nil:
		return value{}, false
	case int64:
		return value{i: x}, k == kInt
	case int32:
		return value{i: int64(x)}, k == kInt
	case int16:
		return value{i: int64(x)}, k == kInt
	case int8:
		return value{i: int64(x)}, k == kInt
	case float64:
		return value{f: x}, k == kFloat
	case float32:
		return value{f: float64(x)}, k == kFloat
	case string:
		return value{b: []byte(x)}, k == kBytes
	case []byte:
		return value{b: x}, k == kBytes
	case bool:
		return value{t: x}, k == kBool
	case scan.Decimal:
		return value{r: x.Rat()}, k == kDec
	case time.Time:
		return value{i: x.UnixMicro()}, k == kTime
	}
	return value{}, false
}

// kindOf is the kind of a primitive Delta type, and whether it has one.
func kindOf(typ string) (kind, bool) {
	switch typ {
	case "long", "integer", "short", "byte":
		return kInt, true
	case "float", "double":
		return kFloat, true
	case "string", "binary":
		return kBytes, true
	case "boolean":
		return kBool, true
	case "date", "timestamp", "timestamp_ntz":
		return kTime, true
	}
	if strings.HasPrefix(typ, "decimal(") {
		return kDec, true
	}
	return 0, false
}

// literal turns a literal into a value of column c's type, or an error
// naming both. A NULL literal is not a value: the caller handles it.
func literal(c *Column, l *sLit) (value, error) {
	mismatch := func(what string) error {
		return &Error{fmt.Sprintf("column %s is %s; %s at offset %d is %s", c.Name, c.Type, litText(l), l.at, what)}
	}
	switch c.kind {
	case kInt, kFloat, kDec:
		if l.kind != litNum {
			return value{}, mismatch("not a number")
		}
		r, ok := new(big.Rat).SetString(l.text)
		if !ok {
			return value{}, mismatch("not a number")
		}
		switch c.kind {
		case kInt:
			if r.IsInt() && r.Num().IsInt64() {
				return value{i: r.Num().Int64()}, nil
			}
			return value{r: r}, nil
		case kFloat:
			f, _ := r.Float64()
			if c.Type == "float" {
				f32, _ := r.Float32()
				f = float64(f32)
			}
			return value{f: f}, nil
		}
		return value{r: r}, nil
	case kBool:
		switch l.kind {
		case litTrue:
			return value{t: true}, nil
		case litFalse:
			return value{t: false}, nil
		}
		return value{}, mismatch("not TRUE or FALSE")
	case kBytes:
		switch {
		case l.kind == litStr:
			return value{b: []byte(l.text)}, nil
		case l.kind == litHex && c.Type == "binary":
			b, err := hex.DecodeString(l.text)
			if err != nil {
				return value{}, mismatch("not hexadecimal")
			}
			return value{b: b}, nil
		}
		return value{}, mismatch("not a string")
	case kTime:
		if l.kind != litStr && l.kind != litDate && l.kind != litTimestamp && l.kind != litTimestampNTZ {
			return value{}, mismatch("not a date or time")
		}
		if c.Type == "date" && (l.kind == litTimestamp || l.kind == litTimestampNTZ) {
			return value{}, mismatch("a timestamp (compare a date column with DATE '...' or 'yyyy-mm-dd')")
		}
		t, err := parseTime(l.text, c.Type == "date" || l.kind == litDate, c.Type == "timestamp_ntz")
		if err != nil {
			return value{}, mismatch(err.Error())
		}
		return value{i: t.UnixMicro()}, nil
	}
	return value{}, mismatch("not comparable")
}

// dateLayouts and timeLayouts are the literal forms of dates and times:
// ISO 8601 / SQL, with a space or a T, an optional fraction, an optional
// zone (Z or an offset; none is UTC, as deltafs prints timestamps).
var (
	timeLayouts = []string{
		"2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02T15:04:05.999999999Z07:00",
		"2006-01-02 15:04",
		"2006-01-02T15:04",
		"2006-01-02",
	}
)

// parseTime reads a date (dateOnly) or a timestamp literal; ntz refuses a
// zone (a wall-clock time has none).
func parseTime(s string, dateOnly, ntz bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if dateOnly {
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return time.Time{}, fmt.Errorf("not a date (yyyy-mm-dd)")
		}
		return t, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if ntz && strings.Contains(l, "Z07") {
				return time.Time{}, fmt.Errorf("a time with a zone, for a timestamp_ntz column")
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a date or time (yyyy-mm-dd[ hh:mm[:ss[.ffffff]]][Z|+hh:mm])")
}

// litText is a literal as written, shortened for messages.
func litText(l *sLit) string {
	var s string
	switch l.kind {
	case litNum:
		s = l.text
	case litStr:
		s = "'" + strings.ReplaceAll(l.text, "'", "''") + "'"
	case litHex:
		s = "X'" + l.text + "'"
	case litTrue:
		s = "TRUE"
	case litFalse:
		s = "FALSE"
	case litNull:
		s = "NULL"
	case litDate:
		s = "DATE '" + l.text + "'"
	case litTimestamp:
		s = "TIMESTAMP '" + l.text + "'"
	case litTimestampNTZ:
		s = "TIMESTAMP_NTZ '" + l.text + "'"
	}
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}
