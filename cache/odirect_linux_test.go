package cache

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// checkODirect reads the located payload with O_DIRECT, the way the GPUDirect
// path will: aligned offset, aligned length, aligned buffer. Filesystems
// without O_DIRECT (tmpfs) are reported and skipped.
func checkODirect(t *testing.T, path string, off int64, want []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Logf("O_DIRECT unsupported here (%v); plain reads checked only", err)
		return
	}
	defer f.Close()
	n := roundUp(int64(len(want)), blockSize)
	raw := make([]byte, n+blockSize)
	shift := (blockSize - int(uintptr(unsafe.Pointer(&raw[0]))%blockSize)) % blockSize
	buf := raw[shift : int64(shift)+n]
	got, err := f.ReadAt(buf, off)
	if err != nil && int64(got) < int64(len(want)) {
		t.Logf("O_DIRECT read failed (%v); plain reads checked only", err)
		return
	}
	if !bytes.Equal(buf[:len(want)], want) {
		t.Fatal("O_DIRECT read of the located extent differs")
	}
}
