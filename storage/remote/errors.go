package remote

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
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

// Timeout is an attempt that ran past a store's RequestTimeout: a
// net.Error with Timeout() true that does not unwrap to
// context.DeadlineExceeded. The per-attempt timeout is the store's, not
// the caller's: the error must not read as the caller's context expiring,
// which upper layers take for an interrupted request.
type Timeout struct{ Msg string }

func (t Timeout) Error() string   { return t.Msg }
func (t Timeout) Timeout() bool   { return true }
func (t Timeout) Temporary() bool { return true }

// IOReason is, in words, why an attempt without an HTTP answer failed
// when it is neither a timeout nor the endpoint refusing connections: a
// body cut short, a lost connection, or another I/O error.
func IOReason(err error) string {
	var be *BodyError
	switch {
	case errors.As(err, &be):
		return "response body cut short"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset"):
		return "connection lost (reset or closed by the server)"
	default:
		return "I/O error"
	}
}
