package sharing

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A profile path that is a named pipe, an endless device or a huge file
// fails at once with one line naming it, never blocks or fills the memory.
func TestLoadProfileHostile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.share")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.share")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.share")
	if err := os.WriteFile(big, []byte(`{"shareCredentialsVersion":1,"endpoint":"https://x","bearerToken":"`+strings.Repeat("t", 2<<20)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "named pipe", zero: "character device", big: "larger than"} {
		done := make(chan error, 1)
		go func() { _, err := LoadProfile(path, time.Now()); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("profile %s: %v, want one line naming it and %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("profile %s: still blocked after 10 s", path)
		}
	}
}
