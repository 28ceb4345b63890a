//go:build linux

package extents

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile opens a file holding extents (a cache file, an extent list) for
// reading, with O_DIRECT when direct is set. A filesystem that refuses
// O_DIRECT (EINVAL: tmpfs on older kernels, some FUSE and network
// filesystems) gets a plain open instead; isDirect tells which happened.
func OpenFile(path string, direct bool) (f *os.File, isDirect bool, err error) {
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

// fuseSuperMagic is statfs's f_type of FUSE filesystems.
const fuseSuperMagic = 0x65735546

// overlaySuperMagic is statfs's f_type of overlayfs, which a deltafs mount
// stacks on its version directories with --overlay.
const overlaySuperMagic = 0x794c7630

// onFUSE reports whether path lies on a FUSE filesystem (a deltafs mount),
// or on an overlayfs, as the version directories of a mount with
// --overlay are: O_DIRECT through an overlay reaches the FUSE file below
// it, while its page cache would serve an extent list materialised before.
func onFUSE(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && (st.Type == fuseSuperMagic || st.Type == overlaySuperMagic)
}
