package httpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Cause is a JSON decoding error in the answer's terms (the field and
// what it holds: "file.id is a JSON number, not a string"), without Go's
// type names.
func Cause(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "a different type"
		switch te.Type.Kind() {
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.String:
			want = "a string"
		case reflect.Slice, reflect.Array:
			want = "an array"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "a boolean"
		}
		if te.Field == "" {
			return fmt.Sprintf("a JSON %s, not an object", te.Value)
		}
		return fmt.Sprintf("%s is a JSON %s, not %s", te.Field, te.Value, want)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not JSON: " + se.Error()
	}
	return "not JSON"
}
