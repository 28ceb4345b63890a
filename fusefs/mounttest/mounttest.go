// Package mounttest holds the helpers of deltafs's mount tests: build the
// deltafs binary once per test package, mount a table with it in the
// background, mount a go-fuse tree in-process, and always unmount in
// t.Cleanup — even when the test fails — with fusermount3 -u, then lazily.
//
// The tests need /dev/fuse and fusermount3; a machine without them fails
// with a clear message rather than skipping, so a broken set-up is never
// mistaken for a pass.
package mounttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/internal/testkit"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// RequireFUSE fails the test when FUSE mounts cannot work here.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("/dev/fuse is missing (%v): these tests need FUSE", err)
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatalf("fusermount3 is missing (apt-get install fuse3): %v", err)
	}
}

// Binary builds ./cmd/deltafs once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deltafs-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "deltafs")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/deltafs")
		cmd.Dir = testkit.ModuleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/deltafs: %v", buildErr)
	}
	return binPath
}

// Tests wraps a test package's testing.M so that its Run, once the tests
// are done, removes the binary Binary built: a package that calls Binary
// runs its tests through it, from TestMain,
//
//	func TestMain(m *testing.M) { os.Exit(mounttest.Tests(m).Run()) }
//
// else every run leaves an 80 MiB binary in the temporary directory.
func Tests(m *testing.M) interface{ Run() int } { return tests{m} }

type tests struct{ m *testing.M }

func (t tests) Run() int {
	code := t.m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}

// Unmount unmounts dir, whatever is mounted there (fs.Unmount), then
// lazily. Errors are ignored: the point is to leave nothing mounted.
func Unmount(dir string) {
	if fusefs.Unmount(dir, false) != nil {
		_ = fusefs.Unmount(dir, true)
	}
}

// Mounted reports whether dir is a mount point (fusefs.Mounted).
func Mounted(dir string) bool { return fusefs.Mounted(dir) }

// Mount is a running `deltafs mount`.
type Mount struct {
	Dir    string
	cmd    *exec.Cmd
	log    *testkit.SyncBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// Pid is the server's process id.
func (m *Mount) Pid() int { return m.cmd.Process.Pid }

// Log is what the server printed so far.
func (m *Mount) Log() string { return m.log.String() }

// Stop sends SIGINT and waits for the server to exit (10 s, then kill).
func (m *Mount) Stop() error {
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	return m.err
}

// Kill kills the server with SIGKILL, leaving a stale mount behind (the
// test's cleanup clears it).
func (m *Mount) Kill() error {
	if err := m.cmd.Process.Kill(); err != nil {
		return err
	}
	<-m.exited
	return nil
}

// Exited is closed when the server has exited.
func (m *Mount) Exited() <-chan struct{} { return m.exited }

// Signal sends sig to the server.
func (m *Mount) Signal(sig os.Signal) error { return m.cmd.Process.Signal(sig) }

// Wait waits up to timeout for the server to exit: exited is false when it
// is still running, else err is its exit error (nil for status 0).
func (m *Mount) Wait(timeout time.Duration) (exited bool, err error) {
	select {
	case <-m.exited:
		return true, m.err
	case <-time.After(timeout):
		return false, nil
	}
}

// Start runs `deltafs mount table DIR flags...` on a fresh directory, waits
// until MOUNT/latest exists, and unmounts in t.Cleanup.
func Start(t testing.TB, bin, table string, flags ...string) *Mount {
	t.Helper()
	return start(t, bin, table, "latest", flags)
}

// start runs the mount on a fresh directory (startAt), unmounting it and
// showing its log on failure in t.Cleanup.
func start(t testing.TB, bin, location, ready string, flags []string) *Mount {
	t.Helper()
	RequireFUSE(t)
	dir := Mountpoint(t)
	m, err := startAt(bin, location, dir, ready, flags)
	if m != nil {
		t.Cleanup(func() {
			_ = m.Stop()
			if Mounted(dir) {
				Unmount(dir)
			}
			if t.Failed() {
				t.Logf("mount log:\n%s", m.Log())
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// StartAt is Start without a test: it returns the mount once MOUNT/latest
// exists and the server says it is mounted, or an error (with the
// server's output) when it exits first or takes 60 s. Waiting for the log
// line matters: until the mount call returns, go-fuse holds a file of the
// mount open (its poll probe), and a server killed then cannot exit (its
// close waits for its own answer).
func StartAt(bin, table, dir string, flags ...string) (*Mount, error) {
	return startAt(bin, table, dir, "latest", flags)
}

// StartCatalog is Start for a catalog location (uc://CATALOG.SCHEMA,
// PROFILE.share, ...): no MOUNT/latest, only the catalog's directories.
func StartCatalog(t testing.TB, bin, location string, flags ...string) *Mount {
	t.Helper()
	return start(t, bin, location, "", flags)
}

// startAt starts the mount and waits for the log line and, unless ready
// is "", for MOUNT/ready.
func startAt(bin, table, dir, ready string, flags []string) (*Mount, error) {
	m := &Mount{Dir: dir, log: &testkit.SyncBuffer{}, exited: make(chan struct{})}
	m.cmd = exec.Command(bin, append([]string{"mount", table, dir}, flags...)...)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		up := Mounted(dir)
		if ready != "" {
			_, err := os.Lstat(filepath.Join(dir, ready))
			up = err == nil
		}
		if up && strings.Contains(m.Log(), "msg=mounted") {
			return m, nil
		}
		select {
		case <-m.exited:
			return m, fmt.Errorf("deltafs mount exited: %v\n%s", m.err, m.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return m, errors.New("deltafs mount did not come up in 60s:\n" + m.Log())
}

// Run runs the binary and returns its combined output and error.
func Run(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// InProcess mounts a go-fuse tree at a fresh directory in this process and
// unmounts it in t.Cleanup.
func InProcess(t testing.TB, root gofs.InodeEmbedder, opts *gofs.Options) string {
	t.Helper()
	return InProcessWith(t, func(dir string) (*fuse.Server, error) { return gofs.Mount(dir, root, opts) })
}

// InProcessRaw mounts a go-fuse raw filesystem at a fresh directory in this
// process and unmounts it in t.Cleanup.
func InProcessRaw(t testing.TB, fsys fuse.RawFileSystem, opts *fuse.MountOptions) string {
	t.Helper()
	return InProcessWith(t, func(dir string) (*fuse.Server, error) {
		srv, err := fuse.NewServer(fsys, dir, opts)
		if err != nil {
			return nil, err
		}
		go srv.Serve()
		return srv, srv.WaitMount()
	})
}

// InProcessWith mounts with mount (a go-fuse server serving in this
// process, mounted at dir) at a fresh directory and unmounts it in
// t.Cleanup.
func InProcessWith(t testing.TB, mount func(dir string) (*fuse.Server, error)) string {
	t.Helper()
	RequireFUSE(t)
	dir := Mountpoint(t)
	srv, err := mount(dir)
	if err != nil {
		t.Fatalf("mount %s: %v", dir, err)
	}
	UnmountOnCleanup(t, dir, srv)
	return dir
}

// Mountpoint is a fresh empty directory to mount on, in t.TempDir().
func Mountpoint(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// UnmountOnCleanup unmounts srv, serving at dir in this process, in
// t.Cleanup: through the server (10 s at most, since a stuck request can
// hold it), else with Unmount.
func UnmountOnCleanup(t testing.TB, dir string, srv *fuse.Server) {
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- srv.Unmount() }()
		select {
		case err := <-done:
			if err == nil {
				srv.Wait()
				return
			}
		case <-time.After(10 * time.Second):
		}
		Unmount(dir)
	})
}
