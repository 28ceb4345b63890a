package main

import (
	"errors"
	"fmt"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/table"
)

// fileErrorLine formats an error about one data file as the one line
// `TABLE version N: FILE: cause`. The layers below each name the version
// and file as they wrap (the sample layer's FileError around the scan
// layer's, ...), which printed as it is repeats them; here they are named
// once, from the innermost wrapper, before the cause. An error that is not
// about a data file gets the table's location (table.WithLocation), and one from
// the log side (*snapshot.Error) already names table, version and file.
func fileErrorLine(location string, err error) error {
	var se *snapshot.Error
	if errors.As(err, &se) {
		return table.WithLocation(location, se)
	}
	version, path, row := int64(-1), "", int64(-1)
	var cause error
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch fe := e.(type) {
		case *sample.FileError:
			version, path, cause = fe.Version, fe.Path, fe.Err
		case *sample.SampleError:
			version, path, row, cause = fe.Version, fe.Path, fe.Row, fe.Err
		case *scan.FileError:
			version, path, cause = fe.Version, fe.Path, fe.Err
		}
	}
	if path == "" {
		return table.WithLocation(location, err)
	}
	if row >= 0 {
		return fmt.Errorf("%s version %d: %s: row %d: %w", location, version, path, row, unnamed{path, cause})
	}
	return fmt.Errorf("%s version %d: %s: %w", location, version, path, unnamed{path, cause})
}

// unnamed is a cause printed without the "FILE: " prefixes the storage
// layer put in it: the line names the file once, before it.
type unnamed struct {
	path string
	err  error
}

func (u unnamed) Error() string { return scan.WithoutName(u.err.Error(), u.path) }
func (u unnamed) Unwrap() error { return u.err }
