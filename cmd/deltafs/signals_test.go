package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// How a mount ends on a signal as users send them: through a log pipe
// whose reader the same Ctrl-C ended, from `timeout`, from a terminal and
// a script that forwards the signal, and with a file open under the mount.

// untilMounted waits (60 s at most) until the server's output (lines)
// says it is mounted, failing the test when it ends first.
func untilMounted(t *testing.T, lines <-chan string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("deltafs mount ended before it said it was mounted")
			}
			if strings.Contains(l, "msg=mounted") {
				return
			}
		case <-deadline:
			t.Fatal("deltafs mount did not say it was mounted in 60s")
		}
	}
}

// exitOf waits (20 s at most) for cmd to end and returns its status.
func exitOf(t *testing.T, cmd *exec.Cmd, done <-chan error) syscall.WaitStatus {
	t.Helper()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("deltafs mount still running 20s after the signal")
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestMountSignalWithClosedLog: `deltafs mount ... 2>&1 | tee log`, then
// Ctrl-C, which ends tee as well: the mount's next log line goes to a pipe
// nobody reads. It used to die of SIGPIPE there, leaving a dead mount; it
// must unmount and exit 0, its lines dropped.
func TestMountSignalWithClosedLog(t *testing.T) {
	bin := mounttest.Binary(t)
	mounttest.RequireFUSE(t)
	dir := mounttest.Mountpoint(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mount", testkit.CopyTable(t, "dat-basic_append"), dir, "--cache-dir", "none")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if mounttest.Mounted(dir) {
			mounttest.Unmount(dir)
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	untilMounted(t, lines)
	r.Close() // the reader of the log is gone
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	ws := exitOf(t, cmd, done)
	if ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("deltafs mount ended with %v after SIGINT with its log pipe closed; want exit 0", describeStatus(ws))
	}
	if mounttest.Mounted(dir) {
		t.Error("still mounted after SIGINT")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("mount point after the exit: %v (a dead mount left behind?)", err)
	}
}

// describeStatus says how a process ended: "exit N" or "death by SIG".
func describeStatus(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "death by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

// TestMountOneSignalTwice: one interruption that reaches the mount twice
// is one: `timeout` signals its command and then the command's group;
// Ctrl-C (or timeout's SIGTERM) reaches a whole group, and a script that
// forwards it to its background mount (make demo) sends it again. That
// used to print "second SIGINT: exiting at once" and exit 1; the mount
// must unmount cleanly and exit 0.
func TestMountOneSignalTwice(t *testing.T) {
	bin := mounttest.Binary(t)
	table := testkit.CopyTable(t, "dat-basic_append")
	t.Run("timeout", func(t *testing.T) {
		mounttest.RequireFUSE(t)
		dir := mounttest.Mountpoint(t)
		cmd := exec.Command("timeout", "120", bin, "mount", table, dir, "--cache-dir", "none")
		log := &testkit.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // timeout's own group
			if mounttest.Mounted(dir) {
				mounttest.Unmount(dir)
			}
		})
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(log.String(), "msg=mounted"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("deltafs mount did not come up in 60s:\n%s", log)
			}
		}
		// timeout passes a SIGTERM it gets on as it does its own.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		ws := exitOf(t, cmd, done)
		if ws.Signaled() || ws.ExitStatus() != 0 || strings.Contains(log.String(), "second") {
			t.Errorf("one SIGTERM from timeout: %s; want exit 0 and no \"second\" line:\n%s", describeStatus(ws), log)
		}
		if mounttest.Mounted(dir) {
			t.Error("still mounted")
		}
	})
	t.Run("forwarded by a script", func(t *testing.T) {
		// `timeout 60 make demo`: SIGTERM reaches the whole group, and
		// demo.sh's trap forwards it as SIGINT moments later. A file held
		// open keeps the mount stopping (busy, for seconds) when it comes.
		m := mounttest.Start(t, bin, table, "--cache-dir", "none")
		holdOpen(t, filepath.Join(m.Dir, "version", "2", "_commit.json"))
		if err := m.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if err := m.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code, took := waitExit(t, m, 20*time.Second)
		if code != 0 || strings.Contains(m.Log(), "second") {
			t.Errorf("SIGTERM, then SIGINT 50ms later: exit %d after %s; want 0 and no \"second\" line:\n%s", code, took, m.Log())
		}
		if mounttest.Mounted(m.Dir) {
			t.Error("still mounted")
		}
	})
}

// holdOpen keeps path open in another process until the test ends.
func holdOpen(t *testing.T, path string) {
	t.Helper()
	holder := exec.Command("sh", "-c", `exec 3< "$1"; echo open; exec sleep 60`, "sh", path)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "open\n" {
		t.Fatalf("the process holding %s open printed %q", path, l)
	}
}

// TestMountSignalWithFileOpen: SIGINT while a file stays open under the
// mount (nothing being read): the mount point is busy, which the log says
// with what to do, not with a flag the running mount does not have; it is
// detached lazily, and the mount exits 0 (it used to exit 1 saying
// requests were stuck in storage).
func TestMountSignalWithFileOpen(t *testing.T) {
	m := mounttest.Start(t, mounttest.Binary(t), testkit.CopyTable(t, "dat-basic_append"), "--cache-dir", "none")
	holdOpen(t, filepath.Join(m.Dir, "version", "2", "_commit.json"))
	if err := m.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, m, 20*time.Second)
	log := m.Log()
	if code != 0 {
		t.Errorf("exit %d after %s; want 0 after a lazy unmount:\n%s", code, took, log)
	}
	for _, want := range []string{"mount point busy: files are open under it; close them", "detached it lazily"} {
		if !strings.Contains(log, want) {
			t.Errorf("no log line says %q:\n%s", want, log)
		}
	}
	for _, bad := range []string{"--lazy", "stuck"} {
		if strings.Contains(log, bad) {
			t.Errorf("the log says %q:\n%s", bad, log)
		}
	}
	if mounttest.Mounted(m.Dir) {
		t.Error("still mounted")
	}
}
