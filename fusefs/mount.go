package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// FSType is the filesystem type of a deltafs mount in /proc/self/mountinfo:
// "fuse." and Root.MountOptions' Name.
const FSType = "fuse.deltafs"

// CheckMountpoint fails with a clear message when dir cannot take a mount:
// missing, not a directory, already a mount point (busy), or a stale FUSE
// mount whose server died ("transport endpoint is not connected"). It does
// not look inside dir: see CheckEmpty.
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
	if m, ok := mountAt(abs); ok {
		return fmt.Errorf("mount point %s is busy: already mounted (%s); unmount it first (`deltafs unmount %s`)", dir, m.FSType, dir)
	}
	return nil
}

// CheckEmpty fails when the directory dir holds anything: a mount over it
// would hide its files until the unmount, which looks like lost data.
func CheckEmpty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) == 0 {
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mount point %s: %w", dir, err)
		}
		return nil
	}
	return fmt.Errorf("mount point %s is not empty (it holds %s, ...): the mount would hide its files; use an empty directory, or --nonempty to mount over them", dir, names[0])
}

// MountInfo is a mount as /proc/self/mountinfo lists it.
type MountInfo struct {
	Point  string // the mount point, absolute
	FSType string // e.g. "fuse.deltafs", "tmpfs"
	Source string // for deltafs, the table's location
}

// Mounted reports whether dir is a mount point now, from
// /proc/self/mountinfo (no request reaches a FUSE server, so it answers
// even when the server is stuck).
func Mounted(dir string) bool {
	_, ok, _ := FindMount(dir)
	return ok
}

// FindMount returns the mount at dir (the topmost, when several are
// stacked there), or ok false when dir is not a mount point. It does not
// stat dir itself, so a stale FUSE mount (ENOTCONN) is found too.
func FindMount(dir string) (m MountInfo, ok bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return m, false, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	} else if err != nil {
		return m, false, err
	}
	p := filepath.Join(parent, filepath.Base(abs))
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if p, err = filepath.EvalSymlinks(p); err != nil {
			return m, false, err
		}
	}
	m, ok = mountAt(p)
	return m, ok, nil
}

// mountAt returns the topmost mount at the absolute path dir, from
// /proc/self/mountinfo.
func mountAt(dir string) (found MountInfo, ok bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return found, false
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
		// Later lines are mounted over earlier ones.
		found, ok = MountInfo{Point: dir, FSType: "unknown"}, true
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				found.FSType = fields[i+1]
				if i+2 < len(fields) {
					found.Source = unescapeMountinfo(fields[i+2])
				}
				break
			}
		}
	}
	return found, ok
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

// Mount mounts fsys (a Root or a Catalog) at dir after CheckMountpoint,
// and returns the server; the caller runs fsys.Run and later
// server.Unmount.
func Mount(dir string, fsys fuse.RawFileSystem, opts *fuse.MountOptions) (*fuse.Server, error) {
	if err := CheckMountpoint(dir); err != nil {
		return nil, err
	}
	server, err := fuse.NewServer(fsys, dir, opts)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	return server, nil
}
