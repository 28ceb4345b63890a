package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// TestMain removes the deltafs binary the tests build.
func TestMain(m *testing.M) { os.Exit(mounttest.Tests(m).Run()) }

// buildDeltafs builds the deltafs binary once per test run (mounttest.Binary).
func buildDeltafs(t *testing.T) string { return mounttest.Binary(t) }

// needTorchvision returns Debian's python3 with torchvision, or fails the test
// (make test installs it; a missing torchvision is a broken set-up, not a skip).
func needTorchvision(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torchvision, numpy").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torchvision (run `make deps` as root, or apt-get install python3-torchvision): %v\n%s", python, err, out)
	}
	return python
}

// run runs the binary and fails the test on a non-zero exit.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("deltafs %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// mount starts `deltafs mount TABLE MNT flags...` in the background, waits
// for the tree to appear, and unmounts in t.Cleanup even when the test fails.
// Without a --cache-dir flag the disk cache goes to a temporary directory,
// never to the user's cache directory.
func mount(t *testing.T, bin, table string, flags ...string) string {
	t.Helper()
	if !slices.ContainsFunc(flags, func(f string) bool { return f == "--cache-dir" || strings.HasPrefix(f, "--cache-dir=") }) {
		flags = append(flags, "--cache-dir", t.TempDir())
	}
	mnt := mounttest.Mountpoint(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "mount.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"mount", table, mnt}, flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the server has exited
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		// A crashed server leaves a stale mount: clear it.
		_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("mount log:\n%s", log)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(filepath.Join(mnt, "latest")); err == nil {
			return mnt
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("deltafs mount exited: %v\n%s", waitErr, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("mount %s did not come up in 30s", mnt)
	return ""
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
