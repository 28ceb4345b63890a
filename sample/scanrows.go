package sample

import (
	"errors"

	"github.com/deltafs/deltafs/snapshot"
)

// ScanRows returns the Rows implementation backed by package scan. Until
// that package is part of the build it fails with a clear error.
func ScanRows(t *snapshot.Table) (Rows, error) {
	return nil, errors.New("this build cannot decode table rows yet (package scan is missing)")
}
