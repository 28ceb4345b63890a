package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
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

// TestUCMountDeadCredentials: a mount whose catalog starts vending dead
// credentials (expired an hour ago) asks it at a bounded pace (1 s, then
// 2 s, 4 s, ...), says so in one warning, fails reads with EIO once the
// last live credentials expire (never a request with expired ones), and
// reads again, with one line saying so, once the catalog vends live ones.
// It used to renew in a loop: tens of thousands of requests and log lines
// a second.
func TestUCMountDeadCredentials(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	const name = "dat-with_checkpoint"
	c := startUCS3(t, 3*time.Second, []string{name})
	flags := append([]string{"--data-column", "-", "--cache-dir", "none", "--mem-cache", "0"}, c.flags...)
	m := mounttest.Start(t, bin, "uc://"+ucName(name), flags...)
	shard := filepath.Join(m.Dir, "latest", "shard", "0")
	names := samplesUnder(t, shard)
	if len(names) == 0 {
		t.Fatal("no samples")
	}
	readAll := func() (failed error) {
		for _, n := range names {
			start := time.Now()
			if _, err := readUncached(filepath.Join(shard, n)); err != nil {
				failed = err
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("a read took %v", d)
			}
		}
		return failed
	}
	if err := readAll(); err != nil {
		t.Fatal(err)
	}
	before := c.uc.VendRequests.Load()
	c.uc.SetVendLifetime(-time.Hour)
	dead := time.Now()
	for readAll() == nil {
		if time.Since(dead) > 10*time.Second {
			t.Fatal("reads still work 10 s after the catalog began vending dead credentials (live for 3 s)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Reads keep failing with EIO, at once.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := readAll(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("a read while the credentials are dead: %v, want EIO", err)
		}
	}
	window := time.Since(dead)
	asked := c.uc.VendRequests.Load() - before
	if max := int64(window/time.Second) + 2; asked > max {
		t.Errorf("%d vend requests in %v of dead credentials, want %d at most", asked, window.Round(time.Millisecond), max)
	}
	log := m.Log()
	if n := strings.Count(log, "renewing the vended credentials fails"); n != 1 {
		t.Errorf("%d warnings that renewal fails, want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "renewed the vended credentials"); n > 3 {
		t.Errorf("%d renewals logged in a few seconds", n)
	}
	// Live credentials again: reads work again without a remount.
	c.uc.SetVendLifetime(0)
	back := time.Now()
	for readAll() != nil {
		if time.Since(back) > 20*time.Second {
			t.Fatalf("reads still fail 20 s after the catalog vends live credentials again:\n%s", m.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	recovered := time.Since(back)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	log = m.Log()
	if n := strings.Count(log, "renewing the vended credentials works again"); n != 1 {
		t.Errorf("%d lines saying renewal works again, want 1:\n%s", n, log)
	}
	if e := c.uc.Expired.Load(); e != 0 {
		t.Errorf("storage refused %d requests as expired: a request went out with dead credentials", e)
	}
	ioLines := strings.Count(log, `msg="I/O error"`)
	t.Logf("%d vend requests in %v of dead credentials; reads back %v after live ones; %d I/O error lines", asked, window.Round(time.Millisecond), recovered.Round(time.Millisecond), ioLines)
}
