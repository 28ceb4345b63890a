package remote

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/deltafs/deltafs/storage"
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

// Error is a failed operation of an object store (S3, Azure, GCS; each
// backend's Error is this type). Its message names the object (or the
// table, for bucket, container, credential and endpoint problems), says
// what went wrong in words, and ends with the operation and the cause
// (Detail). It never contains credentials: backends redact Detail.
//
// errors.Is matches the storage sentinel it stands for (Kind: ErrNotExist,
// ErrExist, ErrChanged, or the context's error), if any, and errors.As
// reaches the cause (Err: the SDK's error).
type Error struct {
	Location string // the table's location (s3://bucket/prefix, ...)
	Op       string // the store's operation (GetObject, GetBlob, read, ...); "" for none
	Key      string // key relative to the table; "" for the table itself
	Reason   string // what went wrong, in words
	Attempts int    // attempts made (0 when unknown)
	// Permanent is set when retrying cannot help (not found, denied, bad
	// credentials, missing bucket, changed object).
	Permanent bool
	Err       error  // the cause, or nil
	Kind      error  // the storage sentinel or context error it stands for, or nil
	Wide      bool   // the table's problem (bucket, credentials, endpoint), not the key's
	Detail    string // the cause in words, as the message ends with it ("": none)
}

func (e *Error) Error() string {
	// "s3://b/t/k: object does not exist" says it all.
	return Message(e.Location, e.Key, e.Reason, e.Kind == storage.ErrNotExist, e.Wide, TableOp(e.Op, e.Key, e.Wide), e.Attempts, e.Detail)
}

// TableWide reports whether the error is the table's (missing bucket or
// container, refused credentials, unreachable endpoint) rather than one
// key's; see storage.IsTableWide.
func (e *Error) TableWide() bool { return e.Wide }

// Unwrap returns the storage sentinel and the cause.
func (e *Error) Unwrap() []error { return Unwrap(e.Kind, e.Err) }
