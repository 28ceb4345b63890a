package scan

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/deltafs/deltafs/snapshot"
)

// AppendJSON appends row as one JSON object (no newline): the logical
// names of fields, in order, with the values of row (as a Scan gives
// them) rendered by their Delta type. The output is deterministic: it is
// what `deltafs cat` prints and what the mount serves for tabular rows.
//
//   - null: null; boolean: true/false; integers: exact decimal digits;
//   - float, double: shortest round-trip form as encoding/json writes it
//     (1, 0.5, 1e-7, 1e+21); NaN and ±Inf as the strings "NaN",
//     "Infinity", "-Infinity";
//   - decimal: a number literal with exactly scale digits after the
//     point (123.45, 1.50, -0.05);
//   - string: a JSON string (invalid UTF-8 becomes U+FFFD);
//     binary: a string of standard base64;
//   - date: "2006-01-02"; timestamp: "2006-01-02T15:04:05.000000Z" (UTC,
//     microseconds); timestamp_ntz: "2006-01-02T15:04:05.000000";
//   - struct: an object in field order; array: an array; map: an object
//     when the key type is string, else an array of {"key":…,"value":…}.
func AppendJSON(buf []byte, fields []snapshot.StructField, row []any) []byte {
	buf = append(buf, '{')
	for i := range fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, fields[i].Name)
		buf = append(buf, ':')
		var v any
		if i < len(row) {
			v = row[i]
		}
		buf = appendValue(buf, fields[i].Type, v)
	}
	return append(buf, '}')
}

// appendValue renders v as Delta type dt. A value whose Go type does not
// fit dt is rendered by its Go type.
func appendValue(b []byte, dt snapshot.DataType, v any) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch t := dt.(type) {
	case *snapshot.PrimitiveType:
		if tm, ok := v.(time.Time); ok {
			switch t.Name {
			case "date":
				return appendQuotedTime(b, tm, "2006-01-02")
			case "timestamp_ntz":
				return appendQuotedTime(b, tm, "2006-01-02T15:04:05.000000")
			}
			return appendQuotedTime(b, tm, "2006-01-02T15:04:05.000000Z")
		}
		if p, ok := v.([]byte); ok && t.Name == "string" {
			return appendString(b, string(p))
		}
	case *snapshot.StructType:
		if s, ok := v.(Struct); ok {
			b = append(b, '{')
			for i := range t.Fields {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, t.Fields[i].Name)
				b = append(b, ':')
				var fv any
				if i < len(s.Values) {
					fv = s.Values[i]
				}
				b = appendValue(b, t.Fields[i].Type, fv)
			}
			return append(b, '}')
		}
	case *snapshot.ArrayType:
		if a, ok := v.([]any); ok {
			b = append(b, '[')
			for i, e := range a {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendValue(b, t.ElementType, e)
			}
			return append(b, ']')
		}
	case *snapshot.MapType:
		if m, ok := v.(Map); ok {
			if kt, ok := t.KeyType.(*snapshot.PrimitiveType); ok && kt.Name == "string" {
				b = append(b, '{')
				for i, e := range m {
					if i > 0 {
						b = append(b, ',')
					}
					k, _ := e.Key.(string)
					b = appendString(b, k)
					b = append(b, ':')
					b = appendValue(b, t.ValueType, e.Value)
				}
				return append(b, '}')
			}
			b = append(b, '[')
			for i, e := range m {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"key":`...)
				b = appendValue(b, t.KeyType, e.Key)
				b = append(b, `,"value":`...)
				b = appendValue(b, t.ValueType, e.Value)
				b = append(b, '}')
			}
			return append(b, ']')
		}
	}
	return appendAny(b, v)
}

// appendAny renders a value by its Go type.
func appendAny(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return appendString(b, x)
	case []byte:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, x)
		return append(b, '"')
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case Decimal:
		return x.appendText(b)
	case time.Time:
		return appendQuotedTime(b, x, "2006-01-02T15:04:05.000000Z")
	case Struct:
		b = append(b, '{')
		for i, n := range x.Names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, n)
			b = append(b, ':')
			if i < len(x.Values) {
				b = appendAny(b, x.Values[i])
			} else {
				b = append(b, "null"...)
			}
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAny(b, e)
		}
		return append(b, ']')
	case Map:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = appendAny(b, e.Key)
			b = append(b, `,"value":`...)
			b = appendAny(b, e.Value)
			b = append(b, '}')
		}
		return append(b, ']')
	}
	return appendString(b, "<unsupported value>")
}

func appendQuotedTime(b []byte, t time.Time, layout string) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, layout)
	return append(b, '"')
}

// appendFloat writes f as encoding/json does, with NaN and infinities as
// strings.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, as encoding/json does without
// HTML escaping: invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are
// escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
