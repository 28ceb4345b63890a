//go:build linux

package extents

import (
	"errors"

	"golang.org/x/sys/unix"
)

// getxattr reads an extended attribute; errNoXattr when the file or its
// filesystem has none of that name.
func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 1024)
	for {
		n, err := unix.Getxattr(path, name, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			// A signal interrupted the FUSE request (the Go runtime's
			// preemption signals do): ask again.
			continue
		case errors.Is(err, unix.ERANGE):
			sz, err := unix.Getxattr(path, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+64)
			continue
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
			return nil, errNoXattr
		case err != nil:
			return nil, err
		}
		return buf[:n], nil
	}
}
