package scan

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sync"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// FileError is the error of reading one data file. It names the snapshot
// version and the data file (its path as the log writes it), so that it
// prints as
//
//	version 3: part-00001-….parquet: cause
//
// A data file missing from storage (vacuumed) has a cause wrapping
// storage.ErrNotExist. A cause from the log side (a *snapshot.Error, such as
// a damaged deletion vector) already names the table, version and file at
// fault, and prints as it is.
type FileError struct {
	Version int64
	Path    string
	Err     error
}

func (e *FileError) Error() string {
	if se := (*snapshot.Error)(nil); errors.As(e.Err, &se) {
		return se.Error()
	}
	return fmt.Sprintf("version %d: %s: %s", e.Version, e.Path, WithoutName(e.Err.Error(), e.Path))
}

// WithoutName drops the "FILE: " prefixes lower layers put in a cause (the
// storage key, the path as the log spells it, escaped or not, or the
// object's whole location, s3://bucket/table/FILE), which the error names
// once already. A name that ends another (7.parquet in part-7.parquet) is
// left alone.
func WithoutName(cause, path string) string {
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

// fileErr wraps err as a *FileError, unless it already is one.
func fileErr(version int64, path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	return &FileError{Version: version, Path: path, Err: err}
}

// errMissing is the cause for a data file missing from storage.
var errMissing = fmt.Errorf("data file missing from storage (vacuumed?): %w", storage.ErrNotExist)

// ioRecorder is an io.ReaderAt over one storage object that remembers the
// first storage error, because parquet-go does not always wrap the errors
// of its reader: the storage error is the cause worth reporting.
type ioRecorder struct {
	r io.ReaderAt

	mu  sync.Mutex
	err error
}

func (rec *ioRecorder) ReadAt(p []byte, off int64) (int, error) {
	n, err := rec.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		rec.mu.Lock()
		if rec.err == nil {
			rec.err = err
		}
		rec.mu.Unlock()
	}
	return n, err
}

// cause returns the error to report for err, an error of parquet-go: the
// storage error behind it when there was one.
func (rec *ioRecorder) cause(err error) error {
	rec.mu.Lock()
	serr := rec.err
	rec.mu.Unlock()
	if errors.Is(serr, storage.ErrNotExist) {
		return errMissing
	}
	if nr := (*storage.NotRegularError)(nil); errors.As(serr, &nr) {
		return nr // a FileError names the file; the kind is the cause
	}
	if serr == nil || errors.Is(err, serr) {
		return err
	}
	return fmt.Errorf("%w (%v)", serr, err)
}

// callbackPanic carries a panic raised by a caller's callback through
// recoverParquet, which must not swallow it.
type callbackPanic struct{ v any }

// recoverParquet turns a panic inside parquet-go into an error in *err. A
// panic raised by a caller's callback (wrapped in callbackPanic) goes on.
func recoverParquet(err *error) {
	p := recover()
	if p == nil {
		return
	}
	if cp, ok := p.(callbackPanic); ok {
		panic(cp.v)
	}
	*err = fmt.Errorf("malformed Parquet file (parquet-go panicked: %v)", p)
}

// callFn calls a caller's callback so that a panic in it is not mistaken
// for one of parquet-go.
func callFn[T any](fn func(int64, T) error, row int64, v T) (err error) {
	done := false
	defer func() {
		if !done {
			// A nil recover is runtime.Goexit (t.FailNow): let it go on.
			if p := recover(); p != nil {
				panic(callbackPanic{p})
			}
		}
	}()
	err = fn(row, v)
	done = true
	return err
}
