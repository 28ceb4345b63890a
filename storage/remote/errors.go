package remote

import (
	"fmt"
	"strings"
)

// Message is the one line of a backend's Error: the object (or the table,
// when tableWide), the reason in words and, in parentheses, the details:
// the operation, the attempt count (when the reason does not tell it) and
// the cause, each when not empty. A plain "does not exist" of one key
// (notExist) says it all and gets no details.
func Message(location, key, reason string, notExist, tableWide bool, op string, attempts int, cause string) string {
	var b strings.Builder
	b.WriteString(location)
	if key != "" && !tableWide {
		b.WriteString("/")
		b.WriteString(key)
	}
	b.WriteString(": ")
	b.WriteString(reason)
	if notExist && !tableWide {
		return b.String()
	}
	var d []string
	if op != "" {
		d = append(d, op)
	}
	if attempts > 1 && !strings.Contains(reason, "attempts") {
		d = append(d, fmt.Sprintf("%d attempts", attempts))
	}
	if cause != "" {
		d = append(d, cause)
	}
	if len(d) > 0 {
		b.WriteString(" (" + strings.Join(d, ", ") + ")")
	}
	return b.String()
}

// Unwrap is an Error's Unwrap: the storage sentinel it stands for (or the
// context's error), then the cause; either may be nil.
func Unwrap(kind, cause error) []error {
	var out []error
	if kind != nil {
		out = append(out, kind)
	}
	if cause != nil {
		out = append(out, cause)
	}
	return out
}

// CheckKey refuses an empty key and one starting with '/', naming the
// backend (s3, azure, gcs).
func CheckKey(backend, key string) error {
	if key == "" || strings.HasPrefix(key, "/") {
		return fmt.Errorf("%s: invalid key %q", backend, key)
	}
	return nil
}

// TableOp is the operation as a detail of Message: with the key when the
// error is the table's (the key is then not in front of the reason).
func TableOp(op, key string, tableWide bool) string {
	if op != "" && key != "" && tableWide {
		op += " " + key
	}
	return op
}
