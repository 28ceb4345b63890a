package fusefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Unmount unmounts the FUSE mount at dir with fusermount3 -u (-z when
// lazy: detach now, finish when the last open file closes), and when that
// fails and the process runs as root, with umount(2) (MNT_DETACH when
// lazy). It does not look at what is mounted at dir: `deltafs unmount`
// checks that first (FindMount, FSType). The overlays stacked inside
// the mount (overlay.go) go first. Errors are one line; a mount
// point in use is ErrBusy (what to do about it is the caller's to say: a
// flag of its own, or waiting).
func Unmount(dir string, lazy bool) error {
	if UnmountOverlays(dir, lazy) && !lazy {
		if _, err := os.Stat(filepath.Join(dir, ".deltafs", "stats")); errors.Is(err, syscall.ENOTCONN) {
			// The server died: only a lazy unmount, which detaches
			// what is under dir, clears what is left.
			lazy = true
		}
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	args = append(args, dir)
	out, ferr := exec.Command("fusermount3", args...).CombinedOutput()
	if ferr == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		err := syscall.Unmount(dir, flags)
		if err == nil {
			return nil
		}
		switch {
		case errors.Is(err, syscall.EBUSY):
			return fmt.Errorf("unmount %s: %w", dir, ErrBusy)
		case errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("unmount %s: not mounted", dir)
		}
		return fmt.Errorf("unmount %s: %v (fusermount3: %s)", dir, err, msg)
	}
	if msg == "" {
		msg = ferr.Error()
	}
	if strings.Contains(msg, "busy") {
		return fmt.Errorf("unmount %s: %w", dir, ErrBusy)
	}
	return fmt.Errorf("unmount %s: %s", dir, msg)
}

// ErrBusy is why an unmount was refused while the mount point is in use.
var ErrBusy = errors.New("busy: files are open under it")
