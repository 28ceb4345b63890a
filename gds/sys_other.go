//go:build !linux

package gds

import (
	"errors"
	"os"
)

var errNotLinux = errors.New("gds: only supported on Linux")

func openRead(path string, direct bool) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}

func statfsType(path string) (int64, error) { return 0, errNotLinux }

func dropPageCache(path string) error { return errNotLinux }
