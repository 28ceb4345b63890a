package unity

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// A ~/.databrickscfg that is a named pipe or an endless device fails at
// once with one line naming the file and its kind, never blocks or fills
// the memory.
func TestConfigFileHostile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "named pipe", zero: "character device"} {
		cleanEnv(t)
		t.Setenv("DATABRICKS_CONFIG_FILE", path)
		done := make(chan error, 1)
		go func() { _, err := ResolveConfig(storage.CatalogOptions{}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind) || strings.Contains(err.Error(), "\n") {
				t.Errorf("config file %s: %v, want one line naming it and %q", path, err, kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("config file %s: still blocked after 10 s", path)
		}
	}
}
