package scan

import (
	"fmt"

	"github.com/deltafs/deltafs/snapshot"
)

// Type widening (PROTOCOL.md, "Type Widening"): a reader must fail on a
// recorded type change it does not support. The changes themselves are
// read by the converters (convert.go).

const metaTypeChanges = "delta.typeChanges"

// checkTypeChanges checks the delta.typeChanges recorded on f and on the
// fields nested in it.
func checkTypeChanges(f *snapshot.StructField) error {
	if changes, ok := f.Metadata[metaTypeChanges].([]any); ok {
		for _, c := range changes {
			m, _ := c.(map[string]any)
			from, _ := m["fromType"].(string)
			to, _ := m["toType"].(string)
			if !wideningSupported(from, to) {
				return fmt.Errorf("column %q: unsupported type change from %q to %q", f.Name, from, to)
			}
		}
	}
	return checkNestedTypeChanges(f.Type)
}

func checkNestedTypeChanges(dt snapshot.DataType) error {
	switch t := dt.(type) {
	case *snapshot.StructType:
		for i := range t.Fields {
			if err := checkTypeChanges(&t.Fields[i]); err != nil {
				return err
			}
		}
	case *snapshot.ArrayType:
		return checkNestedTypeChanges(t.ElementType)
	case *snapshot.MapType:
		if err := checkNestedTypeChanges(t.KeyType); err != nil {
			return err
		}
		return checkNestedTypeChanges(t.ValueType)
	}
	return nil
}

var integerRank = map[string]int{"byte": 1, "short": 2, "integer": 3, "int": 3, "long": 4}

// integerDigits are the decimal digits of each integer rank's range.
var integerDigits = [...]int{0, 3, 5, 10, 19}

// wideningSupported reports whether the protocol allows changing type
// from to type to, and this package reads it.
func wideningSupported(from, to string) bool {
	if from == to {
		return true
	}
	fromInt, toInt := integerRank[from], integerRank[to]
	switch {
	case fromInt > 0 && toInt > 0:
		return fromInt < toInt
	case from == "float" && to == "double":
		return true
	case fromInt > 0 && fromInt < 4 && to == "double":
		return true
	case from == "date" && to == "timestamp_ntz":
		return true
	}
	tp, ts, ok := (&snapshot.PrimitiveType{Name: to}).Decimal()
	if !ok {
		return false
	}
	if fp, fs, ok := (&snapshot.PrimitiveType{Name: from}).Decimal(); ok {
		k1, k2 := tp-fp, ts-fs
		return k1 >= k2 && k2 >= 0
	}
	// The protocol asks for 10 (20 for long) integer digits, as Iceberg
	// does; Spark writes narrower decimals that still hold every value
	// (byte to decimal(4,1)), which read the same way.
	if fromInt > 0 {
		return tp-ts >= integerDigits[fromInt]
	}
	return false
}
