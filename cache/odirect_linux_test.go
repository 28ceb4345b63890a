package cache

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// directFS are the filesystems known to take O_DIRECT (ext4, XFS, btrfs):
// on them a refused open is a failure, not a property of the filesystem.
var directFS = map[int64]string{0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs"}

// checkODirect reads the located payload with O_DIRECT, the way the GPUDirect
// path does: aligned offset, whole blocks, aligned buffer. The entry's last
// block lies wholly inside the file (entry.go), so the read returns every
// block it asks for, the payload then zeros. A filesystem may refuse O_DIRECT
// only with EINVAL (tmpfs before Linux 6.6 does), and only when it is not
// one known to take it; plain reads are then all TestLocate checks.
func checkODirect(t *testing.T, path string, off int64, want []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		var st syscall.Statfs_t
		if serr := syscall.Statfs(path, &st); serr != nil {
			t.Fatalf("O_DIRECT open: %v; statfs: %v", err, serr)
		}
		if name, ok := directFS[int64(st.Type)]; ok || !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("O_DIRECT open refused on %s (magic %#x): %v", name, st.Type, err)
		}
		t.Logf("filesystem (magic %#x) refuses O_DIRECT (%v): plain reads checked only", st.Type, err)
		return
	}
	defer f.Close()
	n := roundUp(int64(len(want)), blockSize)
	raw := make([]byte, n+blockSize)
	shift := (blockSize - int(uintptr(unsafe.Pointer(&raw[0]))%blockSize)) % blockSize
	buf := raw[shift : int64(shift)+n]
	got, err := f.ReadAt(buf, off)
	if err != nil || int64(got) != n {
		t.Fatalf("O_DIRECT read of %d bytes at %d: %d bytes, %v", n, off, got, err)
	}
	if !bytes.Equal(buf[:len(want)], want) {
		t.Fatal("O_DIRECT read of the located extent differs")
	}
	if !bytes.Equal(buf[len(want):], make([]byte, n-int64(len(want)))) {
		t.Fatal("O_DIRECT read: the block padding after the payload is not zeros")
	}
}
