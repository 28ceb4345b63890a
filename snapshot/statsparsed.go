package snapshot

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// A checkpoint's add.stats_parsed (writeStatsAsStruct) holds an add's
// statistics as a typed struct instead of, or beside, the JSON string.
// When an add has no JSON string, its stats_parsed is rendered into one:
// the JSON a writer would have written (numRecords, and minValues,
// maxValues and nullCount of top-level columns by physical name), so
// every consumer of AddFile.Stats (file skipping in package filter, class
// ranges in package sample) reads one representation, and memory per
// file is what the JSON path costs (the typed columns live only while a
// row group is decoded).
//
// A value is rendered only where the rendering is exact: integers and
// decimals as written, floats other than NaN and infinities in their
// shortest round-tripping form, dates, timestamps at their full
// precision (with a zone when adjusted to UTC, without for
// timestamp_ntz), valid UTF-8 strings, booleans; binary and nested
// columns are left out (the filter bounds neither). Anything null or
// of an unknown Parquet type is left out: a missing statistic bounds
// nothing. Each rendered column's type is then checked against the
// checkpoint's own schema (checkParsedStats): a file whose stats_parsed
// disagrees with the schema anywhere gives its adds no statistics from
// it at all, so a hostile or foreign layout can cost skipping but never
// skip wrongly.

// statKind is the Delta type family a stats_parsed leaf was rendered as.
type statKind uint8

const (
	skInt statKind = iota + 1
	skFloat
	skDecimal // scale in statLeaf.scale
	skString
	skBool
	skDate
	skTimestamp    // adjusted to UTC
	skTimestampNTZ // not adjusted
)

// statLeaf is one top-level column of stats_parsed.minValues, maxValues
// or nullCount.
type statLeaf struct {
	name  string // physical column name
	col   *pqColumn
	kind  statKind
	scale int
	unit  int64 // INT64 timestamps: 1000 milliseconds, 1 microseconds, -1000 nanoseconds
	int96 bool  // an INT96 timestamp
}

// statsParsed is the stats_parsed columns of one row group.
type statsParsed struct {
	num             *pqColumn
	min, max, nulls []statLeaf
}

// parsedLayout is what a checkpoint file's stats_parsed columns are: per
// section, the physical column names rendered and their kinds. One per
// file (the layout is the file's schema).
type parsedLayout struct {
	min, max map[string]statLeaf
	nulls    map[string]statLeaf
}

// readStatsParsed finds add.stats_parsed's columns in g (nil when the
// file has none).
func readStatsParsed(g *groupReader) (*statsParsed, *parsedLayout) {
	root, ok := g.p.resolve("add", "stats_parsed")
	if !ok || root.node == nil || root.node.Leaf() {
		return nil, nil
	}
	sp := &statsParsed{}
	lay := &parsedLayout{}
	if path, ok := g.p.resolve("add", "stats_parsed", "numRecords"); ok && path.col >= 0 && isIntNode(path.node) {
		sp.num, _ = g.column("add", "stats_parsed", "numRecords")
	}
	sp.min, lay.min = statLeaves(g, "minValues", false)
	sp.max, lay.max = statLeaves(g, "maxValues", false)
	sp.nulls, lay.nulls = statLeaves(g, "nullCount", true)
	return sp, lay
}

func isIntNode(n parquet.Node) bool {
	t := n.Type()
	if k := t.Kind(); k != parquet.Int32 && k != parquet.Int64 {
		return false
	}
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		it, ok := lt.Value.(*format.IntType)
		return ok && it.IsSigned
	}
	return t.ConvertedType() == nil
}

// statLeaves reads the top-level leaf columns of one section; counts
// wants integer leaves only.
func statLeaves(g *groupReader, section string, counts bool) ([]statLeaf, map[string]statLeaf) {
	path, ok := g.p.resolve("add", "stats_parsed", section)
	if !ok || path.node == nil || path.node.Leaf() {
		return nil, nil
	}
	var leaves []statLeaf
	m := map[string]statLeaf{}
	for _, f := range path.node.Fields() {
		if !f.Leaf() || f.Repeated() || !utf8.ValidString(f.Name()) {
			continue // nested columns bound nothing in the filter
		}
		var l statLeaf
		if counts {
			if !isIntNode(f) {
				continue
			}
			l = statLeaf{kind: skInt}
		} else if l, ok = leafKind(f); !ok {
			continue
		}
		l.name = f.Name()
		l.col, _ = g.column("add", "stats_parsed", section, f.Name())
		if l.col == nil {
			continue
		}
		leaves = append(leaves, l)
		m[l.name] = l
	}
	return leaves, m
}

// leafKind is how a stats_parsed leaf renders, from its Parquet type.
func leafKind(n parquet.Node) (statLeaf, bool) {
	t := n.Type()
	var lv format.LogicalTypeValue
	if lt := t.LogicalType(); lt != nil {
		lv = lt.Value
	}
	switch t.Kind() {
	case parquet.Boolean:
		return statLeaf{kind: skBool}, lv == nil
	case parquet.Float, parquet.Double:
		return statLeaf{kind: skFloat}, lv == nil
	case parquet.Int96:
		// Spark's legacy timestamps: an instant.
		return statLeaf{kind: skTimestamp, int96: true}, lv == nil
	case parquet.Int32, parquet.Int64:
		switch v := lv.(type) {
		case nil:
			if t.ConvertedType() != nil {
				return statLeaf{}, false // a legacy annotation without a logical type: unknown
			}
			return statLeaf{kind: skInt}, true
		case *format.IntType:
			return statLeaf{kind: skInt}, v.IsSigned
		case *format.DateType:
			return statLeaf{kind: skDate}, t.Kind() == parquet.Int32
		case *format.DecimalType:
			return statLeaf{kind: skDecimal, scale: int(v.Scale)}, v.Scale >= 0
		case *format.TimestampType:
			if t.Kind() != parquet.Int64 {
				return statLeaf{}, false
			}
			l := statLeaf{kind: skTimestampNTZ}
			if v.IsAdjustedToUTC {
				l.kind = skTimestamp
			}
			switch v.Unit.Value.(type) {
			case *format.MilliSeconds:
				l.unit = 1000
			case *format.MicroSeconds:
				l.unit = 1
			case *format.NanoSeconds:
				l.unit = -1000
			default:
				return statLeaf{}, false
			}
			return l, true
		}
	case parquet.ByteArray, parquet.FixedLenByteArray:
		switch v := lv.(type) {
		case *format.StringType:
			return statLeaf{kind: skString}, t.Kind() == parquet.ByteArray
		case *format.DecimalType:
			return statLeaf{kind: skDecimal, scale: int(v.Scale)}, v.Scale >= 0
		}
	}
	return statLeaf{}, false
}

// render is row r's statistics as the JSON string a writer would have
// written ("" when stats_parsed gives nothing).
func (sp *statsParsed) render(r int) string {
	if sp == nil {
		return ""
	}
	var b []byte
	b = append(b, '{')
	n := 0
	if v, ok := sp.num.value(r); ok && v.i >= 0 {
		b = append(b, `"numRecords":`...)
		b = strconv.AppendInt(b, v.i, 10)
		n++
	}
	for _, sec := range []struct {
		name   string
		leaves []statLeaf
	}{{"minValues", sp.min}, {"maxValues", sp.max}, {"nullCount", sp.nulls}} {
		start := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, sec.name...)
		b = append(b, `":{`...)
		k := 0
		for _, l := range sec.leaves {
			v, ok := l.col.value(r)
			if !ok {
				continue
			}
			val, ok := l.json(v)
			if !ok {
				continue
			}
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, l.name)
			b = append(b, ':')
			b = append(b, val...)
			k++
		}
		if k == 0 {
			b = b[:start]
			continue
		}
		b = append(b, '}')
		n++
	}
	if n == 0 {
		return ""
	}
	b = append(b, '}')
	return string(b)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // s is valid UTF-8: marshalled as is
	return append(b, q...)
}

// json renders one value of leaf l exactly, or reports it cannot.
func (l statLeaf) json(v pqValue) (string, bool) {
	switch l.kind {
	case skInt:
		return strconv.FormatInt(v.i, 10), true
	case skBool:
		return strconv.FormatBool(v.i != 0), true
	case skFloat:
		f := math.Float64frombits(uint64(v.i))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", false
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	case skString:
		if !utf8.ValidString(v.s) {
			return "", false // JSON would replace the bad bytes: not the value
		}
		return string(appendJSONString(nil, v.s)), true
	case skDate:
		t := time.Unix(v.i*86400, 0).UTC()
		if t.Year() < 1 || t.Year() > 9999 {
			return "", false
		}
		return `"` + t.Format("2006-01-02") + `"`, true
	case skTimestamp, skTimestampNTZ:
		t, ok := l.instant(v)
		if !ok || t.Year() < 1 || t.Year() > 9999 {
			return "", false
		}
		if l.kind == skTimestamp {
			return `"` + t.Format("2006-01-02T15:04:05.999999999Z07:00") + `"`, true
		}
		return `"` + t.Format("2006-01-02T15:04:05.999999999") + `"`, true
	case skDecimal:
		return decimalString(v, l.scale)
	}
	return "", false
}

// instant is a timestamp leaf's value (in UTC; a timestamp_ntz's wall
// clock as UTC).
func (l statLeaf) instant(v pqValue) (time.Time, bool) {
	if l.int96 {
		// 8 bytes of nanoseconds in the day, 4 of Julian day, little-endian.
		if len(v.s) != 12 {
			return time.Time{}, false
		}
		nanos := int64(binary.LittleEndian.Uint64([]byte(v.s[:8])))
		day := int64(binary.LittleEndian.Uint32([]byte(v.s[8:])))
		if nanos < 0 || nanos >= 86400e9 {
			return time.Time{}, false
		}
		return time.Unix((day-2440588)*86400, nanos).UTC(), true
	}
	switch l.unit {
	case 1000: // milliseconds
		return time.UnixMilli(v.i).UTC(), true
	case 1:
		return time.UnixMicro(v.i).UTC(), true
	case -1000:
		return time.Unix(0, v.i).UTC(), true
	}
	return time.Time{}, false
}

// decimalString renders an unscaled decimal (INT32/INT64, or big-endian
// two's complement bytes) at scale.
func decimalString(v pqValue, scale int) (string, bool) {
	var u big.Int
	if v.s == "" {
		u.SetInt64(v.i)
	} else {
		if len(v.s) > 32 {
			return "", false
		}
		u.SetBytes([]byte(v.s))
		if v.s[0]&0x80 != 0 {
			u.Sub(&u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v.s))))
		}
	}
	if scale > 38 {
		return "", false
	}
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(&u).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		digits = "-" + digits
	}
	return digits, true
}

// checkParsedStats reports whether a file's stats_parsed layout agrees
// with the schema: every rendered column is a top-level column of it
// (by physical name) of the kind rendered.
func checkParsedStats(lay *parsedLayout, schema *StructType) bool {
	if lay == nil {
		return true
	}
	if schema == nil {
		return false
	}
	byPhys := map[string]*StructField{}
	for i := range schema.Fields {
		f := &schema.Fields[i]
		byPhys[f.PhysicalName()] = f
	}
	for _, sec := range []map[string]statLeaf{lay.min, lay.max} {
		for name, l := range sec {
			f := byPhys[name]
			if f == nil || !kindFits(l, f.Type) {
				return false
			}
		}
	}
	for name := range lay.nulls {
		if byPhys[name] == nil {
			return false
		}
	}
	return true
}

// kindFits reports whether a leaf rendered as l may bound a column of
// type t.
func kindFits(l statLeaf, t DataType) bool {
	p, ok := t.(*PrimitiveType)
	if !ok {
		return false
	}
	switch p.Name {
	case "byte", "short", "integer", "long":
		return l.kind == skInt
	case "float", "double":
		return l.kind == skFloat
	case "string":
		return l.kind == skString
	case "boolean":
		return l.kind == skBool
	case "date":
		return l.kind == skDate
	case "timestamp":
		return l.kind == skTimestamp
	case "timestamp_ntz":
		return l.kind == skTimestampNTZ
	}
	if _, scale, ok := p.Decimal(); ok {
		return l.kind == skDecimal && l.scale == scale
	}
	return false
}
