package scan

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/snapshot"
)

// ParsePartitionValue turns the serialized partition value of a column of
// type dt (PROTOCOL.md, "Partition Value Serialization") into its Go value.
// raw is nil for a null; an empty string is a null for every type, as the
// protocol says. Timestamps without a zone are read as UTC.
func ParsePartitionValue(dt snapshot.DataType, raw *string) (any, error) {
	return parsePartitionValue(dt, raw, time.UTC)
}

// parsePartitionValue is ParsePartitionValue reading timestamps without a
// zone in loc.
func parsePartitionValue(dt snapshot.DataType, raw *string, loc *time.Location) (any, error) {
	if raw == nil || *raw == "" {
		return nil, nil
	}
	pt, ok := dt.(*snapshot.PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("partition column of type %s", dt)
	}
	s := *raw
	v, err := parsePartition(pt, s, loc)
	if err != nil {
		return nil, fmt.Errorf("partition value %q is not a valid %s: %w", s, pt.Name, err)
	}
	return v, nil
}

func parsePartition(pt *snapshot.PrimitiveType, s string, loc *time.Location) (any, error) {
	if prec, scale, ok := pt.Decimal(); ok {
		return parseDecimal(s, prec, scale)
	}
	switch pt.Name {
	case "string":
		return s, nil
	case "binary":
		return []byte(s), nil
	case "boolean":
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("not true or false")
	case "long":
		return strconv.ParseInt(s, 10, 64)
	case "integer":
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	case "short":
		v, err := strconv.ParseInt(s, 10, 16)
		return int16(v), err
	case "byte":
		v, err := strconv.ParseInt(s, 10, 8)
		return int8(v), err
	case "float":
		v, err := strconv.ParseFloat(s, 32)
		return float32(v), err
	case "double":
		return strconv.ParseFloat(s, 64)
	case "date":
		return parseDate(s)
	case "timestamp":
		return parseTimestamp(s, loc)
	case "timestamp_ntz":
		return parseTimestamp(s, time.UTC)
	case "void":
		return nil, nil
	}
	return nil, fmt.Errorf("type %s cannot be a partition column", pt.Name)
}

// parseDecimal reads a decimal string (plain or with an exponent, as Java's
// BigDecimal.toString writes) exactly, at the column's scale.
func parseDecimal(s string, prec, scale int) (Decimal, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal{}, fmt.Errorf("not a number")
	}
	r.Mul(r, new(big.Rat).SetInt(pow10(scale)))
	if !r.IsInt() {
		return Decimal{}, fmt.Errorf("more than %d digits after the point", scale)
	}
	u := r.Num()
	if len(strings.TrimPrefix(u.String(), "-")) > prec {
		return Decimal{}, fmt.Errorf("more than %d digits", prec)
	}
	return NewDecimal(u, scale), nil
}

// parseDate reads {year}-{month}-{day}, as midnight UTC.
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-1-2", s); err == nil {
		return t, nil
	}
	// A date with a time part: keep the day.
	if i := strings.IndexAny(s, " T"); i > 0 {
		if t, err := time.Parse("2006-1-2", s[:i]); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a date")
}

// timestampLayouts are the forms a timestamp partition value takes: the
// protocol's "{date} {time}[.{fraction}]", and ISO 8601 with a zone.
var timestampLayouts = []string{
	"2006-1-2 15:4:5.999999999",
	"2006-1-2T15:4:5.999999999",
	"2006-1-2 15:4:5.999999999Z07:00",
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999Z0700",
	"2006-1-2T15:4:5.999999999Z0700",
	"2006-1-2 15:4:5.999999999 Z07:00",
	"2006-1-2 15:4",
	"2006-1-2T15:4",
	"2006-1-2",
}

// parseTimestamp reads a timestamp partition value; one without a zone is
// taken in loc.
func parseTimestamp(s string, loc *time.Location) (time.Time, error) {
	for _, l := range timestampLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a timestamp")
}
