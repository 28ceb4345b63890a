package sample

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
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
	return fmt.Sprintf("%s version %d: data file %s: %s", e.Table, e.Version, e.Path, withoutName(e.Err.Error(), e.Path))
}

// withoutName drops the "FILE: " prefixes lower layers put in a cause (the
// storage key, the path as the log spells it, or the object's whole
// location, s3://bucket/table/FILE), which the error names once already.
func withoutName(cause, path string) string {
	names := []string{path}
	if p, err := url.PathUnescape(path); err == nil && p != path {
		names = append(names, p)
	}
	for _, n := range names {
		cause = regexp.MustCompile(`(^|\s)(\S*/)?`+regexp.QuoteMeta(n)+`: `).ReplaceAllString(cause, "$1")
	}
	return cause
}

func (e *FileError) Unwrap() error { return e.Err }

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
	return fmt.Sprintf("%s version %d: data file %s row %d: %s", e.Table, e.Version, e.Path, e.Row, withoutName(e.Err.Error(), e.Path))
}

func (e *SampleError) Unwrap() error { return e.Err }
