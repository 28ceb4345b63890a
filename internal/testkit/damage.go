package testkit

import (
	"os"
	"testing"
)

// FlipByte inverts every bit of the byte at off of the file at path, in
// place: bit rot that the file's size and modification time need not
// show.
func FlipByte(t testing.TB, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("%s: reading byte %d: %v", path, off, err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
