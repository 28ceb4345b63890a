package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// TestUnmountRefusesOthers: `deltafs unmount` (run as root, where umount(2)
// would unmount anything) refuses a tmpfs and a directory that is not a
// mount point, each with exit 1 and one line, and leaves the tmpfs
// mounted; it unmounts a deltafs mount, and a stale one whose server was
// killed.
func TestUnmountRefusesOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts a tmpfs")
	}
	tmp := t.TempDir()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(tmp, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(tmp, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lazy := range [][]string{nil, {"--lazy"}} {
		out, code := runDF(t, nil, "", append([]string{"unmount", tmp}, lazy...)...)
		wantRefusal(t, "unmount of a tmpfs", out, code, 1, "deltafs: unmount "+tmp+": not a deltafs mount (tmpfs from tmpfs); refusing to unmount it")
		if !mounttest.Mounted(tmp) {
			t.Fatal("deltafs unmount unmounted the tmpfs")
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "keep")); err != nil {
		t.Fatalf("the tmpfs lost its file: %v", err)
	}

	plain := t.TempDir()
	out, code := runDF(t, nil, "", "unmount", plain)
	wantRefusal(t, "unmount of a plain directory", out, code, 1, "deltafs: unmount "+plain+": not a mount point")

	// A live deltafs mount, by a relative path: found, unmounted.
	bin := mounttest.Binary(t)
	table := "../../testdata/delta/dat-basic_append"
	m := mounttest.Start(t, bin, table, "--cache-dir", "none")
	info, ok, err := fusefs.FindMount(m.Dir)
	if err != nil || !ok || info.FSType != fusefs.FSType {
		t.Fatalf("mountinfo of a deltafs mount: %+v %v %v, want type %s", info, ok, err, fusefs.FSType)
	}
	if abs, _ := filepath.Abs(table); info.Source != abs {
		t.Errorf("mount source %q, want the table %q", info.Source, abs)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, m.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runDF(t, nil, "", "unmount", rel); code != 0 || mounttest.Mounted(m.Dir) {
		t.Fatalf("unmount of a deltafs mount: exit %d, still mounted %v\n%s", code, mounttest.Mounted(m.Dir), out)
	}
	if exited, err := m.Wait(10 * time.Second); !exited || err != nil {
		t.Errorf("the server after the unmount: exited %v, %v", exited, err)
	}

	// A stale one: the server was killed; stat says ENOTCONN.
	m = mounttest.Start(t, bin, table, "--cache-dir", "none")
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	// (.deltafs/stats: its attributes are never cached, the root's are.)
	if _, err := os.Stat(filepath.Join(m.Dir, ".deltafs", "stats")); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("stat of the stale mount: %v, want ENOTCONN", err)
	}
	if out, code := runDF(t, nil, "", "unmount", m.Dir); code != 0 || mounttest.Mounted(m.Dir) || strings.TrimSpace(out) != "" {
		t.Fatalf("unmount of a stale deltafs mount: exit %d, still mounted %v\n%s", code, mounttest.Mounted(m.Dir), out)
	}
}

// TestUnmountBusy: `deltafs unmount` of a mount with a file open under it
// fails with exit 1 and one line saying so and what to do (close the
// files, or --lazy, the flag of this command); --lazy then detaches it.
func TestUnmountBusy(t *testing.T) {
	m := mounttest.Start(t, mounttest.Binary(t), "../../testdata/delta/dat-basic_append", "--cache-dir", "none")
	holdOpen(t, filepath.Join(m.Dir, "version", "2", "_commit.json"))
	out, code := runDF(t, nil, "", "unmount", m.Dir)
	wantRefusal(t, "unmount of a busy mount", out, code, 1, "deltafs: unmount "+m.Dir+": busy: files are open under it; close them, or detach it now with --lazy")
	if !mounttest.Mounted(m.Dir) {
		t.Fatal("not mounted after a refused unmount")
	}
	if out, code := runDF(t, nil, "", "unmount", "--lazy", m.Dir); code != 0 || mounttest.Mounted(m.Dir) {
		t.Fatalf("deltafs unmount --lazy of a busy mount: exit %d, %q; still mounted: %v", code, out, mounttest.Mounted(m.Dir))
	}
}
