//go:build linux

package gds

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openRead opens path for reading, with O_DIRECT when direct is set. A
// filesystem that refuses O_DIRECT (EINVAL: tmpfs on older kernels, some
// FUSE and network filesystems) gets a plain open instead; isDirect tells
// which happened.
func openRead(path string, direct bool) (f *os.File, isDirect bool, err error) {
	if direct {
		f, err = os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
		if err == nil {
			return f, true, nil
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EOPNOTSUPP) {
			return nil, false, err
		}
	}
	f, err = os.Open(path)
	return f, false, err
}

// statfsType returns the filesystem magic number (statfs f_type) of path.
func statfsType(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return int64(st.Type), nil
}

// dropPageCache asks the kernel to drop path's clean cached pages
// (POSIX_FADV_DONTNEED), so a benchmark measures the disk.
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return &os.PathError{Op: "fadvise", Path: path, Err: err}
	}
	return nil
}
