//go:build !linux

package gds

import "errors"

var errNotLinux = errors.New("gds: only supported on Linux")

func statfsType(path string) (int64, error) { return 0, errNotLinux }

func dropPageCache(path string) error { return errNotLinux }
