package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileConfigFiles are the files a user may point a configuration path
// at by mistake or malice, each with what ReadConfig must say: a named
// pipe (an open would block until a writer comes), an endless device, a
// directory, a file larger than the bound.
func hostileConfigFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{fifo: "named pipe", zero: "character device", dir: "directory", big: "larger than 1048576 bytes"}
}

func TestReadConfig(t *testing.T) {
	good := filepath.Join(t.TempDir(), "cfg")
	if err := os.WriteFile(good, []byte("[DEFAULT]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadConfig(good, 1<<20); err != nil || string(b) != "[DEFAULT]\n" {
		t.Fatalf("regular file: %q, %v", b, err)
	}
	if _, err := ReadConfig(filepath.Join(t.TempDir(), "none"), 1<<20); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
	for path, want := range hostileConfigFiles(t) {
		done := make(chan error, 1)
		go func() { _, err := ReadConfig(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error saying %q", filepath.Base(path), err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadConfig still blocked after 10 s", filepath.Base(path))
		}
	}
}
