package sample

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
)

// NullName is the name given to a null id or class.
const NullName = "__null__"

// valueString renders a column value as text for ids and classes:
// integers in decimal, integral floats as integers ("5", not "5.0"), other
// floats in shortest form, strings as they are, binary as lower-case hex.
// ok is false for a null.
func valueString(v any) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case []byte:
		if x == nil {
			return "", false
		}
		return fmt.Sprintf("%x", x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int16:
		return strconv.FormatInt(int64(x), 10), true
	case int8:
		return strconv.FormatInt(int64(x), 10), true
	case int:
		return strconv.Itoa(x), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case float64:
		return floatString(x), true
	case float32:
		return floatString(float64(x)), true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		if f, err := x.Float64(); err == nil && isIntegral(f) && !isIntLiteral(string(x)) {
			return floatString(f), true
		}
		return string(x), true
	case *big.Int:
		if x == nil {
			return "", false
		}
		return x.String(), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	case fmt.Stringer:
		return x.String(), true
	}
	return fmt.Sprint(v), true
}

func isIntLiteral(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func isIntegral(f float64) bool {
	return !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f) && math.Abs(f) < 1e18
}

func floatString(f float64) string {
	if isIntegral(f) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// numericValue reports the value of a numeric column value.
func numericValue(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// digits is the number of decimal digits of the integral part of |f|.
func digits(f float64) int {
	f = math.Abs(math.Trunc(f))
	n := 1
	for f >= 10 {
		f /= 10
		n++
	}
	return n
}

// padNumeric renders a non-negative numeric class zero-padded to width
// digits in its integral part, so that names sort like the numbers.
func padNumeric(s string, width int) string {
	intPart := s
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == 'e' || s[i] == 'E' {
			intPart = s[:i]
			break
		}
	}
	if len(intPart) >= width || len(intPart) == 0 || intPart[0] == '-' {
		return s
	}
	pad := make([]byte, width-len(intPart))
	for i := range pad {
		pad[i] = '0'
	}
	return string(pad) + s
}

// integralTypes are the Delta types whose ids are kept as int64s.
var integralTypes = map[string]bool{"long": true, "integer": true, "short": true, "byte": true}
