//go:build unix

package cache

import (
	"errors"
	"syscall"
)

// diskSpace reports the bytes available to an unprivileged user and the
// total size of the filesystem holding path.
func diskSpace(path string) (avail, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}

// pidAlive reports whether a process with this id exists in our pid
// namespace. EPERM means it exists but belongs to someone else.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
