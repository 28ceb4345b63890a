package sample

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/deltafs/deltafs/scan"
)

// ErrNotExist is returned for names that are not in a version or shard.
var ErrNotExist = errors.New("no such sample")

// FileError is a data file that could not be read (vacuumed away, corrupt,
// unreachable, or holding other rows than the log says). It prints as one
// line naming the table, the version, the file and the cause.
type FileError struct {
	Table   string
	Version int64
	Path    string
	Err     error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("%s version %d: data file %s: %s", e.Table, e.Version, e.Path, causeOf(e.Table, e.Path, e.Err))
}

func (e *FileError) Unwrap() error { return e.Err }

// causeOf is err's message without the names the error states already:
// the data file's (scan.WithoutName) and the table's (a store's error
// about the whole table, an unreachable endpoint, starts with it).
func causeOf(table, path string, err error) string {
	c := scan.WithoutName(err.Error(), path)
	if table == "" {
		return c
	}
	return regexp.MustCompile(`(^|\s)`+regexp.QuoteMeta(table)+`: `).ReplaceAllString(c, "$1")
}

// SpecError is a version the mount's spec cannot serve: a column it names
// is not in the version's schema, or its filter does not bind to it.
type SpecError struct {
	Table   string
	Version int64
	Err     error
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s version %d: %s", e.Table, e.Version, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

// SampleError is one sample that cannot be produced, for example raw pixels
// of the wrong length: the sample fails, never a wrong image.
type SampleError struct {
	Table   string
	Version int64
	Path    string
	Row     int64
	Err     error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("%s version %d: data file %s row %d: %s", e.Table, e.Version, e.Path, e.Row, causeOf(e.Table, e.Path, e.Err))
}

func (e *SampleError) Unwrap() error { return e.Err }
