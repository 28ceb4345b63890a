package csi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A heldConn keeps a mount's FUSE connection open beyond its server, so
// that the pod sees EIO, not ENOTCONN, when the server dies.
//
// Linux ends a FUSE connection when the last file open on it closes: a
// mount whose server died answers every access with ENOTCONN ("Transport
// endpoint is not connected"), which loaders do not treat as the I/O
// error it is. The plugin therefore holds a clone of each mount's
// connection: it takes the server's /dev/fuse descriptor (pidfd_getfd)
// and clones the connection on a /dev/fuse of its own
// (FUSE_DEV_IOC_CLONE), then reads nothing while the server lives (the
// server answers every request). When the server dies, the requests it
// had taken end with ECONNABORTED, the connection stays, and the plugin
// answers every request after them with EIO until the mount point is
// detached (the connection then ends, and so does the answering). A
// restarted plugin clones the connections of the mounts it adopts; one
// whose server died while no plugin ran answers ENOTCONN until the next
// publish remakes it.
type heldConn struct {
	fd   int           // the clone, non-blocking
	stop [2]int        // a pipe: a byte written ends answer
	done chan struct{} // closed when answer has returned

	mu       sync.Mutex
	released bool // the descriptors are closed (under mu)
}

// fuseDevIocClone is FUSE_DEV_IOC_CLONE, _IOR(229, 0, uint32).
const fuseDevIocClone = 0x8004e500

// holdConn clones the FUSE connection that process pid serves.
func holdConn(pid int) (*heldConn, error) {
	target, err := fuseFD(pid)
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	theirs, err := unix.PidfdGetfd(pidfd, target, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_getfd: %w", err)
	}
	defer unix.Close(theirs)
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("/dev/fuse: %w", err)
	}
	old := uint32(theirs)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fuseDevIocClone, uintptr(unsafe.Pointer(&old))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("FUSE_DEV_IOC_CLONE: %w", errno)
	}
	h := &heldConn{fd: fd, done: make(chan struct{})}
	if err := unix.Pipe2(h.stop[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	return h, nil
}

// fuseFD is a descriptor of process pid open on /dev/fuse.
func fuseFD(pid int) (int, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == "/dev/fuse" {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("process %d has no /dev/fuse open", pid)
}

// answer answers every request on the connection with EIO until it ends
// (the mount point detached) or close is called, then closes the clone.
// Call it once, when the server has died.
func (h *heldConn) answer() {
	defer func() {
		h.release()
		close(h.done)
	}()
	buf := make([]byte, 1<<20+64<<10) // a request of any size the kernel sends
	fds := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}, {Fd: int32(h.stop[0]), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if fds[1].Revents != 0 {
			return // close
		}
		n, err := unix.Read(h.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOENT):
			continue
		case err != nil: // ENODEV: the connection ended (detached)
			return
		case n < 40: // shorter than a request's header
			continue
		}
		opcode := *(*uint32)(unsafe.Pointer(&buf[4]))
		unique := *(*uint64)(unsafe.Pointer(&buf[8]))
		switch opcode {
		case 2, 36, 42: // FORGET, INTERRUPT, BATCH_FORGET: no answer
			continue
		}
		var out [16]byte
		*(*uint32)(unsafe.Pointer(&out[0])) = 16
		*(*int32)(unsafe.Pointer(&out[4])) = -int32(unix.EIO)
		*(*uint64)(unsafe.Pointer(&out[8])) = unique
		_, _ = unix.Write(h.fd, out[:]) // ENOENT: interrupted meanwhile
	}
}

// close stops answer, if it runs, and closes the clone.
func (h *heldConn) close(answering bool) {
	h.mu.Lock()
	if !h.released {
		_, _ = unix.Write(h.stop[1], []byte{0})
	}
	h.mu.Unlock()
	if answering {
		<-h.done
	}
	h.release()
}

// release closes the descriptors, once.
func (h *heldConn) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	unix.Close(h.fd)
	unix.Close(h.stop[0])
	unix.Close(h.stop[1])
}
