package fs

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
// the mount (overlay.go) go first. Errors are one line that says
// what to do (close the files, or unmount lazily).
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
			return fmt.Errorf("unmount %s: busy (files open under it); close them or use --lazy", dir)
		case errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("unmount %s: not mounted", dir)
		}
		return fmt.Errorf("unmount %s: %v (fusermount3: %s)", dir, err, msg)
	}
	if msg == "" {
		msg = ferr.Error()
	}
	if strings.Contains(msg, "busy") && !lazy {
		msg += "; close the files open under it or use --lazy"
	}
	return fmt.Errorf("unmount %s: %s", dir, msg)
}
