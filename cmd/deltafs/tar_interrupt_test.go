package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// A tar view read by a process that is killed or interrupted while the
// mount builds the shard's index (the first stat of K.tar), or in the
// middle of reading the archive: the next reader gets the whole archive,
// byte for byte as a fresh mount serves it, the mount answers at once
// afterwards, and no request is left behind (none waits in the FUSE
// connection, none is open on the file server). The data files are
// served through a sharing server whose file server answers slowly, so
// that the build and the read take seconds and the kill lands inside
// them.

// tarReader is a Python reader of a tar view: it prints "open" once the
// file is open (the index is built then), then the bytes read so far
// after each 64 KiB.
const tarReader = `
import sys
f = open(sys.argv[1], "rb", buffering=0)
print("open", flush=True)
n = 0
while True:
    b = f.read(65536)
    if not b:
        break
    n += len(b)
    print(n, flush=True)
print("end", flush=True)
`

// slowShare is a sharing server whose file server waits delay on every
// answer, sharing a table of 600 digits in 12 data files; it returns the
// server and the table's location.
func slowShare(t *testing.T) (*sharingtest.Server, string) {
	t.Helper()
	digits := testkit.MNIST(t, testkit.MNISTTest)[:600]
	tbl := newDeltaTable(t, filepath.Join(t.TempDir(), "t"))
	tbl.commit(time.UnixMilli(1_700_000_000_000), digitSchema, chunk(digits, 50))
	srv := sharingtest.Start(t, time.Hour)
	srv.AddTable(t, "share", "default", "digits", tbl.dir)
	profile := filepath.Join(t.TempDir(), "config.share")
	srv.WriteProfile(t, profile, srv.Token)
	return srv, profile + "#share.default.digits"
}

// fusectlMagic is the statfs type of the fusectl filesystem.
const fusectlMagic = 0x65735543

// fuseConnections is a directory where the fusectl filesystem (the FUSE
// connections' counters) is mounted: /sys/fs/fuse/connections when it is
// mounted there, else a mount of the test's own (unmounted at cleanup),
// since nothing mounts it on a fresh machine.
func fuseConnections(t *testing.T) string {
	t.Helper()
	const sys = "/sys/fs/fuse/connections"
	var sf syscall.Statfs_t
	if syscall.Statfs(sys, &sf) == nil && sf.Type == fusectlMagic {
		return sys
	}
	dir := t.TempDir()
	if err := syscall.Mount("fusectl", dir, "fusectl", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		t.Fatalf("mount fusectl (the FUSE connections' counters) at %s: %v (this test runs as root)", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount fusectl at %s: %v", dir, err)
		}
	})
	return dir
}

// fuseWaiting is how many requests of the mount at dir wait in its FUSE
// connection (fusectl's "waiting"; ctl is where fusectl is mounted).
func fuseWaiting(t *testing.T, ctl, dir string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	minor := (st.Dev & 0xff) | ((st.Dev >> 12) & 0xfff00)
	b, err := os.ReadFile(filepath.Join(ctl, strconv.FormatUint(minor, 10), "waiting"))
	if err != nil {
		t.Fatalf("fusectl: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// settle waits (30 s at most) until the mount has no request waiting and
// the file server none in flight (ctl: fuseConnections); it fails the test
// otherwise.
func settle(t *testing.T, ctl string, srv *sharingtest.Server, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, f := fuseWaiting(t, ctl, dir), srv.InFlight.Load()
		if w == 0 && f == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the reader died, %d requests still wait in the FUSE connection, %d on the file server", w, f)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startReader starts the Python reader on path and returns it and its
// output lines.
func startReader(t *testing.T, path string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-c", tarReader, path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

// killedBy waits (30 s at most) for cmd to die and checks it died of sig,
// or (SIGINT, which Python turns into KeyboardInterrupt) with status 1.
func killedBy(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the reader did not die within 30 s of %v", sig)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("the reader ended with %v, want death by %v", err, sig)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !(ws.Signaled() && ws.Signal() == sig) && !(sig == syscall.SIGINT && ws.ExitStatus() == 1) {
		t.Fatalf("the reader ended with %v, want death by %v", ws, sig)
	}
}

// TestMountTarInterrupted: a reader of version/0/shard/0.tar is killed
// (SIGKILL) or interrupted (SIGINT) while the mount builds the shard's
// index, or in the middle of reading the archive; then the archive read
// whole equals the one a fresh mount serves, byte for byte, and is a
// well-formed tar of every sample.
func TestMountTarInterrupted(t *testing.T) {
	bin := mounttest.Binary(t)
	ctl := fuseConnections(t)
	srv, loc := slowShare(t)
	flags := []string{"--cache-dir", "none", "--shards", "1", "--image", "28x28", "--class-column", "label"}

	// The reference: a fresh mount, nobody interrupted.
	var want []byte
	{
		m := mounttest.Start(t, bin, loc, flags...)
		b, err := os.ReadFile(filepath.Join(m.Dir, "version", "0", "shard", "0.tar"))
		if err != nil {
			t.Fatal(err)
		}
		want = b
		if err := m.Stop(); err != nil {
			t.Fatalf("unmount: %v", err)
		}
	}
	if members := bytes.Count(want, []byte("ustar")); members != 1200 {
		t.Fatalf("the clean archive holds %d members, want 1200 (600 samples and their classes)", members)
	}

	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		when string // "index": while the index is built; "read": mid-archive
	}{
		{"index/SIGKILL", syscall.SIGKILL, "index"},
		{"index/SIGINT", syscall.SIGINT, "index"},
		{"read/SIGKILL", syscall.SIGKILL, "read"},
		{"read/SIGINT", syscall.SIGINT, "read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mounttest.Start(t, bin, loc, flags...)
			tarPath := filepath.Join(m.Dir, "version", "0", "shard", "0.tar")
			srv.SetFileDelay(300 * time.Millisecond)
			if srv.InFlight.Load() != 0 {
				t.Fatal("the file server is busy before the first read")
			}
			reader, lines := startReader(t, tarPath)
			deadline := time.After(30 * time.Second)
			switch tc.when {
			case "index":
				// The build reads data files: wait until it does, and kill
				// the reader before its open returned.
				for srv.InFlight.Load() == 0 {
					select {
					case l := <-lines:
						t.Fatalf("the reader printed %q before the index was read", l)
					case <-deadline:
						t.Fatal("no data file read within 30 s of the open")
					case <-time.After(10 * time.Millisecond):
					}
				}
			case "read":
				// Past the open, and some bytes in, but not at the end.
				got := 0
				for got == 0 {
					select {
					case l, ok := <-lines:
						if !ok || l == "end" {
							t.Fatal("the reader reached the end before it could be killed")
						}
						if n, err := strconv.Atoi(l); err == nil && n > 0 {
							got = n
						}
					case <-deadline:
						t.Fatal("no archive byte read within 30 s")
					}
				}
				if got >= len(want) {
					t.Fatalf("the reader read %d bytes of %d before the kill", got, len(want))
				}
			}
			if err := reader.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			killedBy(t, reader, tc.sig)
			for l := range lines {
				if l == "end" {
					t.Fatal("the reader read the whole archive before it died")
				}
				if tc.when == "index" {
					t.Fatalf("the reader printed %q: its open returned before the kill", l)
				}
			}
			settle(t, ctl, srv, m.Dir)

			// The next reader (on a fast file server again, to keep the
			// test short): the whole archive, as a fresh mount's.
			srv.SetFileDelay(0)
			got, err := os.ReadFile(tarPath)
			if err != nil {
				t.Fatalf("reading the archive after the kill: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("after the kill the archive has %d bytes, a fresh mount's %d, and they differ", len(got), len(want))
			}
			if fi, err := os.Stat(tarPath); err != nil || fi.Size() != int64(len(want)) {
				t.Fatalf("stat after the kill: %v, %v", fi, err)
			}
			settle(t, ctl, srv, m.Dir)
			if err := m.Stop(); err != nil {
				t.Fatalf("unmount: %v\n%s", err, m.Log())
			}
		})
	}
}
