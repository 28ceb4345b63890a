package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// A mount must end within a bound on SIGINT or SIGTERM even when a
// request is stuck in the kernel: its table lives on a filesystem that
// stopped answering (a hung NFS server). The test serves the table from
// an in-process FUSE loopback whose reads of one data file block until the
// test ends, ignoring interrupts, as a hard NFS mount does.

// hungNode is a loopback node whose reads of files named block never
// return until release is closed.
type hungNode struct {
	*gofs.LoopbackNode
	block   string
	release <-chan struct{}
	stuck   chan<- struct{} // gets a value when a read blocks
}

var _ = (gofs.NodeReader)((*hungNode)(nil))
var _ = (gofs.NodeOpener)((*hungNode)(nil))
var _ = (gofs.NodeWrapChilder)((*hungNode)(nil))

func (n *hungNode) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &hungNode{LoopbackNode: ops.(*gofs.LoopbackNode), block: n.block, release: n.release, stuck: n.stuck}
}

// Open hides the loopback file's passthrough descriptor: with it, the
// kernel would read the backing file itself, never asking Read.
func (n *hungNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return plainFile{fh}, fl, 0
}

// plainFile is a file handle that only reads and releases.
type plainFile struct{ fh gofs.FileHandle }

func (p plainFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return p.fh.(gofs.FileReader).Read(ctx, dest, off)
}

func (p plainFile) Release(ctx context.Context) syscall.Errno {
	return p.fh.(gofs.FileReleaser).Release(ctx)
}

func (n *hungNode) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if filepath.Base(n.Path(nil)) == n.block {
		select {
		case n.stuck <- struct{}{}:
		default:
		}
		<-n.release // ctx (the kernel's interrupt) is ignored on purpose
		return nil, syscall.EIO
	}
	return fh.(plainFile).Read(ctx, dest, off)
}

// hungDir serves dir through a FUSE mount where reading a file named block
// hangs; stuck gets a value when a read hangs.
func hungDir(t *testing.T, dir, block string) (mnt string, stuck <-chan struct{}) {
	t.Helper()
	root, err := gofs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	st := make(chan struct{}, 1)
	node := &hungNode{LoopbackNode: root.(*gofs.LoopbackNode), block: block, release: release, stuck: st}
	mnt = mounttest.InProcess(t, node, &gofs.Options{})
	// Cleanups run last first: the reads are released before the unmount.
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	return mnt, st
}

// hungTable serves a copy of dat-basic_append where reading
// basicAppendFile hangs.
func hungTable(t *testing.T) (table string, stuck <-chan struct{}) {
	t.Helper()
	return hungDir(t, testkit.CopyTable(t, "dat-basic_append"), basicAppendFile)
}

// startStuck mounts the hung table and gets a read stuck in it: a reader
// that holds a file of the mount open (so the mount point is busy) looks up
// the shard's sample list, which needs the hung file's footer. It returns the
// mount and the reader (killed at cleanup).
func startStuck(t *testing.T) *mounttest.Mount {
	t.Helper()
	table, stuck := hungTable(t)
	m := mounttest.Start(t, mounttest.Binary(t), table, "--cache-dir", "none")
	reader := exec.Command("sh", "-c", `exec 3< "$1"; cat "$2"; sleep 60`, "sh",
		filepath.Join(m.Dir, "version", "2", "_commit.json"), filepath.Join(m.Dir, "version", "2", "shard", "0", "_samples.tsv"))
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Process.Kill(); reader.Wait() })
	select {
	case <-stuck:
	case <-time.After(30 * time.Second):
		t.Fatal("no read got stuck in the table's filesystem in 30s")
	}
	return m
}

// waitExit waits for the server to exit within limit and returns its exit
// status and how long it took.
func waitExit(t *testing.T, m *mounttest.Mount, limit time.Duration) (code int, took time.Duration) {
	t.Helper()
	start := time.Now()
	exited, err := m.Wait(limit)
	took = time.Since(start)
	if !exited {
		t.Fatalf("deltafs mount still running %s after the signal\n%s", limit, m.Log())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), took
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, took
}

// TestMountSignalWithReadStuck: SIGTERM or SIGINT with a read stuck in
// the kernel unmounts (lazily, the reader keeps it busy) and exits within
// the bound, saying why.
func TestMountSignalWithReadStuck(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		t.Run(name, func(t *testing.T) {
			m := startStuck(t)
			if err := m.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, took := waitExit(t, m, 20*time.Second)
			want := "deltafs: unmounted " + m.Dir + ", but requests still stuck in storage 8s after " + name + ": exiting without them"
			if code != 1 || lastLine(m.Log()) != want {
				t.Fatalf("exit %d after %s, last line %q; want 1 and %q\n%s", code, took, lastLine(m.Log()), want, m.Log())
			}
			if !strings.Contains(m.Log(), "detached it lazily") {
				t.Errorf("no log line says the busy mount point was detached:\n%s", m.Log())
			}
			if mounttest.Mounted(m.Dir) {
				t.Error("still mounted")
			}
		})
	}
}

// TestMountSignalAfterOutsideUnmount: the mount point is unmounted from
// outside (`deltafs unmount --lazy`: the stuck reader keeps it busy) while
// a read is stuck; the server used to wait for that read for good and
// ignore SIGTERM. It now exits within the bound.
func TestMountSignalAfterOutsideUnmount(t *testing.T) {
	m := startStuck(t)
	if out, err := mounttest.Run(mounttest.Binary(t), "unmount", "--lazy", m.Dir); err != nil {
		t.Fatalf("deltafs unmount --lazy: %v %s", err, out)
	}
	if mounttest.Mounted(m.Dir) {
		t.Fatal("still mounted after deltafs unmount --lazy")
	}
	// The stuck request holds the server; nothing else should end it.
	if exited, _ := m.Wait(2 * time.Second); exited {
		t.Logf("the server exited by itself after the unmount:\n%s", m.Log())
	}
	if err := m.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, m, 20*time.Second)
	want := "deltafs: unmounted " + m.Dir + ", but requests still stuck in storage 8s after SIGTERM: exiting without them"
	if code != 1 || lastLine(m.Log()) != want {
		t.Fatalf("exit %d after %s, last line %q; want 1 and %q\n%s", code, took, lastLine(m.Log()), want, m.Log())
	}
	if strings.Contains(m.Log(), "busy") {
		t.Errorf("the server tried to unmount a mount point no longer mounted:\n%s", m.Log())
	}
}

// TestMountSecondSignal: a second signal exits at once, detaching the
// mount point first.
func TestMountSecondSignal(t *testing.T) {
	m := startStuck(t)
	if err := m.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * sameSignal) // a second one, not the first delivered twice
	if err := m.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, m, 6*time.Second)
	if want := "deltafs: second SIGINT: exiting at once"; code != 1 || lastLine(m.Log()) != want {
		t.Fatalf("exit %d after %s, last line %q; want 1 and %q\n%s", code, took, lastLine(m.Log()), want, m.Log())
	}
	if mounttest.Mounted(m.Dir) {
		t.Error("still mounted after a forced exit")
	}
	if _, err := os.Stat(m.Dir); err != nil {
		t.Errorf("mount point after the forced exit: %v (a dead mount left behind?)", err)
	}
}
