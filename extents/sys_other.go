//go:build !linux

package extents

import "os"

// OpenFile opens path for reading; O_DIRECT is Linux-only, so isDirect is
// always false here.
func OpenFile(path string, direct bool) (f *os.File, isDirect bool, err error) {
	f, err = os.Open(path)
	return f, false, err
}

// onFUSE: deltafs mounts are Linux-only.
func onFUSE(path string) bool { return false }
