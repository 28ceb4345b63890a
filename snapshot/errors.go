package snapshot

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deltafs/deltafs/storage"
)

// Sentinel errors. Errors from this package wrap them; test with errors.Is.
var (
	// ErrNotDeltaTable: the location has no _delta_log, or one with no
	// commit or checkpoint in it.
	ErrNotDeltaTable = errors.New("not a Delta table")
	// ErrVersionNotFound: the version (or timestamp) asked for is not in the
	// readable range of the log: newer than the latest version, or older
	// than the earliest version that can be reconstructed.
	ErrVersionNotFound = errors.New("version not found")
	// ErrLogGap: a commit file needed to reconstruct a version is missing.
	ErrLogGap = errors.New("missing commit file (gap in the log)")
	// ErrCorrupt: a log file (commit, checkpoint, sidecar, deletion
	// vector) cannot be parsed or fails a consistency check.
	ErrCorrupt = errors.New("corrupt")
)

// Error is the error type of this package. It names the table, the version
// being read (when there is one) and the table-relative file at fault (when
// there is one), so that the command line prints
//
//	deltafs: TABLE version N: FILE: cause
type Error struct {
	Table   string // table location as given to storage
	Version int64  // -1 when no version is involved
	File    string // table-relative key of the file at fault; "" for none
	Err     error  // the cause
}

func (e *Error) Error() string {
	if e.Err != nil && storage.IsTableWide(e.Err) {
		// "s3://b/t: bucket b does not exist (...)": about the table, and
		// naming it already; a file or version would mislead.
		if msg := e.Err.Error(); strings.HasPrefix(msg, e.Table) {
			return msg
		}
	}
	var b strings.Builder
	b.WriteString(e.Table)
	if e.Version >= 0 {
		b.WriteString(" version ")
		b.WriteString(strconv.FormatInt(e.Version, 10))
	}
	if e.File != "" {
		b.WriteString(": ")
		b.WriteString(e.File)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// FileVersion is the version of the log file at fault (a commit, a
// checkpoint or a log compaction's first version), or false when the
// file is not one (a sidecar, a data file) or there is none. Every
// version from it up to e.Version fails alike: they all need that file
// (or the protocol it set).
func (e *Error) FileVersion() (int64, bool) {
	p := parseLogPath(e.File)
	if p.Kind == kindUnknown || p.Kind == kindChecksum {
		return -1, false
	}
	return p.Version, true
}

// UnsupportedFeatureError is the cause when a table version needs a
// protocol this reader does not implement: a reader version outside 1..3,
// reader features missing from SupportedReaderFeatures, or reader version 3
// without a readerFeatures list.
type UnsupportedFeatureError struct {
	ReaderVersion int      // the table's minReaderVersion
	Features      []string // the unsupported reader features, if any
	Detail        string   // extra explanation, if any
}

func (e *UnsupportedFeatureError) Error() string {
	var parts []string
	if e.ReaderVersion < minSupportedReaderVersion || e.ReaderVersion > maxSupportedReaderVersion {
		parts = append(parts, fmt.Sprintf("reader version %d is not supported (deltafs reads versions %d to %d)",
			e.ReaderVersion, minSupportedReaderVersion, maxSupportedReaderVersion))
	}
	if len(e.Features) == 1 {
		parts = append(parts, fmt.Sprintf("reader feature %q is not supported", e.Features[0]))
	} else if len(e.Features) > 1 {
		q := make([]string, len(e.Features))
		for i, f := range e.Features {
			q[i] = strconv.Quote(f)
		}
		parts = append(parts, "reader features "+strings.Join(q, ", ")+" are not supported")
	}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	return "unsupported table protocol: " + strings.Join(parts, "; ")
}

// tableErr wraps err as an *Error of table t at version v about file. An
// err that already is an *Error is returned as it is.
func (t *Log) err(version int64, file string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Table: t.st.Location(), Version: version, File: file, Err: err}
}

// cause is an error that matches a sentinel (errors.Is) without repeating
// the sentinel's text: the message says what is wrong in its own words.
type cause struct {
	sentinel error
	msg      string
	wrapped  error // an underlying error, if any
}

func (c *cause) Error() string { return c.msg }

func (c *cause) Unwrap() []error {
	if c.wrapped != nil {
		return []error{c.sentinel, c.wrapped}
	}
	return []error{c.sentinel}
}

// because makes a cause matching sentinel; a %w verb in format also
// wraps that argument.
func because(sentinel error, format string, args ...any) error {
	e := fmt.Errorf(format, args...)
	return &cause{sentinel: sentinel, msg: e.Error(), wrapped: errors.Unwrap(e)}
}

// corruptf is a cause matching ErrCorrupt.
func corruptf(format string, args ...any) error { return because(ErrCorrupt, format, args...) }

// storageCause shortens a storage error about key (which the message
// already names) to its cause, keeping it matchable.
func storageCause(err error) error {
	if nr := (*storage.NotRegularError)(nil); errors.As(err, &nr) {
		return nr // "not a regular file (named pipe)"
	}
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return because(storage.ErrNotExist, "does not exist")
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The storage error names the key again: the message already does.
		return because(io.ErrUnexpectedEOF, "shorter than the log says (truncated?)")
	}
	return err
}
