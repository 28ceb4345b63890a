//go:build linux

package gds

import (
	"os"

	"golang.org/x/sys/unix"
)

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
