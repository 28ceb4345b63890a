//go:build unix

package cache

import (
	"errors"
	"io"
	"io/fs"
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

// rfile is a read-only file descriptor used on the disk-hit path. Raw
// system calls instead of *os.File save the poller registration attempt and
// the finalizer: about a quarter of a small disk hit.
type rfile int

func openRead(path string) (rfile, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return rfile(fd), nil
}

func (f rfile) size() (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f), &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

// readAt fills b from off; a short read means end of file (io.EOF).
func (f rfile) readAt(b []byte, off int64) error {
	for len(b) > 0 {
		n, err := syscall.Pread(int(f), b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

func (f rfile) close() { syscall.Close(int(f)) }

// isReadOnlyFS reports an error of writing to a read-only filesystem.
func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }
