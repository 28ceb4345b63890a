package fs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// CheckMountpoint fails with a clear message when dir cannot take a mount:
// missing, not a directory, already a mount point (busy), or a stale FUSE
// mount whose server died ("transport endpoint is not connected").
func CheckMountpoint(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("mount point %s: transport endpoint is not connected: a stale mount whose server died; run `deltafs unmount %s` first", dir, dir)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mount point %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("mount point %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("mount point %s is not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	if fstype, ok := mountedAt(abs); ok {
		return fmt.Errorf("mount point %s is busy: already mounted (%s); unmount it first (`deltafs unmount %s`)", dir, fstype, dir)
	}
	return nil
}

// Mounted reports whether dir is a mount point now, from
// /proc/self/mountinfo (no request reaches a FUSE server, so it answers
// even when the server is stuck).
func Mounted(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(real, filepath.Base(abs))
	}
	_, ok := mountedAt(abs)
	return ok
}

// mountedAt reports whether a mount is at the absolute path dir, from
// /proc/self/mountinfo.
func mountedAt(dir string) (fstype string, ok bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != dir {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				return fields[i+1], true
			}
		}
		return "unknown", true
	}
	return "", false
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Mount mounts root at dir after CheckMountpoint, and returns the server;
// the caller runs root.Run and later server.Unmount.
func Mount(dir string, root *Root, opts *gofs.Options) (*fuse.Server, error) {
	if err := CheckMountpoint(dir); err != nil {
		return nil, err
	}
	return gofs.Mount(dir, root, opts)
}
