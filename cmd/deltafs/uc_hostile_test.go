package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/internal/unitytest"
)

// startMount starts `deltafs mount table` on a fresh mount point, its
// output in the returned buffer; done is closed when it has exited. The
// process is killed at the end.
func startMount(t *testing.T, bin, table string) (cmd *exec.Cmd, out *testkit.SyncBuffer, done chan struct{}) {
	t.Helper()
	mnt := mounttest.Mountpoint(t)
	out = &testkit.SyncBuffer{}
	cmd = exec.Command(bin, "mount", table, mnt, "--cache-dir", "none")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if mounttest.Mounted(mnt) {
			mounttest.Unmount(mnt)
			t.Errorf("%s left mounted", mnt)
		}
	})
	return cmd, out, done
}

// TestUCMountLocationLoop: `deltafs mount` of a catalog table stored at
// uc://itself (or at another catalog table) exits at once with one line
// naming the table and the location. It used to open the table again and
// again until the memory ran out.
func TestUCMountLocationLoop(t *testing.T) {
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Hour, "", "")
	uc.AddTable("main.default.self", "uc://main.default.self")
	uc.AddTable("main.default.a", "uc://main.default.b")
	uc.AddTable("main.default.b", "uc://main.default.a")
	ucEnv(t, uc)
	for _, name := range []string{"self", "a"} {
		table := "uc://main.default." + name
		_, out, done := startMount(t, bin, table)
		start := time.Now()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still running after 10 s (%d catalog requests)", table, uc.Requests.Load())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "deltafs: "+table+": the catalog's storage_location \"uc://main.default.") || !strings.Contains(last, "not a storage location") {
			t.Fatalf("%s: the mount said:\n%s", table, out)
		}
		t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), last)
	}
	if n := uc.Requests.Load(); n > 4 {
		t.Errorf("%d catalog requests for two refusals", n)
	}
}

// TestUCMountSIGTERMWhileCatalogSilent: a mount waiting for a catalog that
// never answers ends promptly on SIGTERM, saying so.
func TestUCMountSIGTERMWhileCatalogSilent(t *testing.T) {
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Hour, "", "")
	uc.AddTable("main.default.t", "s3://lake/t")
	uc.SetStall(true)
	ucEnv(t, uc)
	cmd, out, done := startMount(t, bin, "uc://main.default.t")
	for deadline := time.Now().Add(10 * time.Second); uc.Requests.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no catalog request in 10 s:\n%s", out)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after SIGTERM:\n%s", out)
	}
	if !strings.Contains(out.String(), "interrupted by SIGTERM") {
		t.Errorf("the mount said:\n%s", out)
	}
	t.Logf("exited %v after SIGTERM: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out.String()))
}
