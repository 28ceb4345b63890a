package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// isatty does what CPython's open() does with default buffering: open,
// TCGETS, read all, close. It returns the bytes.
func isattyRead(t *testing.T, dirfd int, p string) []byte {
	t.Helper()
	fd, err := unix.Openat(dirfd, p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer unix.Close(fd)
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("isatty %s: %v, want ENOTTY", p, err)
	}
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOverlayAnswersIsatty: with overlays, CPython's open (open, TCGETS,
// read) of samples under a pinned version/N and under latest sends no
// IOCTL to the server and reads the same bytes as the FUSE mount (which
// does get an IOCTL per open: the counter counts); a new version appears
// and latest moves to it (and gets its overlay); a vacuumed file's sample
// fails with EIO through the overlay, every time; statfs is the mount's;
// UnmountOverlays leaves nothing stacked.
func TestOverlayAnswersIsatty(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts overlayfs")
	}
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(20, 0)}, {Path: "b", Rows: digits(20, 100)}}, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, 50*time.Millisecond)
	t.Cleanup(func() {
		if fusefs.UnmountOverlays(m.dir, true) {
			t.Error("overlays left after UnmountOverlays")
		}
	})
	// The FUSE mount's own version/0, held before the overlay hides it.
	fuseV0, err := unix.Open(filepath.Join(m.dir, "version", "0"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fuseV0)
	var want [][]byte
	for _, n := range []string{"shard/0/0.png", "shard/0/1.png", "shard/0/100.png"} {
		want = append(want, isattyRead(t, fuseV0, n))
	}
	if got := m.root.Counters().Ioctls.Load(); got != 3 {
		t.Fatalf("%d IOCTLs from 3 opens on the FUSE mount, want 3 (is the counter counting?)", got)
	}

	if err := m.root.StartOverlays(m.dir); err != nil {
		t.Fatal(err)
	}
	if n := m.root.Overlays(); n != 1 {
		t.Fatalf("%d overlays after the start, want 1 (latest's)", n)
	}
	v0, err := unix.Open(filepath.Join(m.dir, "version", "0"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(v0)
	var st unix.Statfs_t
	if err := unix.Fstatfs(v0, &st); err != nil || st.Type == unix.FUSE_SUPER_MAGIC {
		t.Fatalf("version/0 after the start: statfs type %#x (%v), want the overlay's", st.Type, err)
	}
	ioctls := m.root.Counters().Ioctls.Load()
	for i, n := range []string{"shard/0/0.png", "shard/0/1.png", "shard/0/100.png"} {
		for range 3 {
			if got := isattyRead(t, v0, n); !bytes.Equal(got, want[i]) {
				t.Fatalf("%s through the overlay: %d bytes differing from the mount's %d", n, len(got), len(want[i]))
			}
		}
		if got, err := os.ReadFile(filepath.Join(m.dir, "latest", n)); err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("latest/%s: %v", n, err)
		}
	}
	if got := m.root.Counters().Ioctls.Load() - ioctls; got != 0 {
		t.Fatalf("%d IOCTLs reached the server through the overlay, want 0", got)
	}
	var fst, ost unix.Statfs_t
	if err := unix.Statfs(m.dir, &fst); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstatfs(v0, &ost); err != nil || ost.Blocks != fst.Blocks || ost.Files != fst.Files {
		t.Fatalf("statfs through the overlay %+v (%v), the mount's %+v", ost, err, fst)
	}

	// A version that does not exist yet, then does.
	if _, err := os.Stat(filepath.Join(m.dir, "version", "1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("version/1 before its commit: %v", err)
	}
	tbl.Commit(t0.Add(time.Minute), "WRITE", []sampletest.Add{{Path: "c", Rows: digits(5, 200)}}, nil, nil)
	waitFor(t, "latest -> version/1", func() bool {
		l, _ := os.Readlink(filepath.Join(m.dir, "latest"))
		return l == "version/1"
	})
	if _, err := os.ReadFile(filepath.Join(m.dir, "latest", "shard", "0", "200.png")); err != nil {
		t.Fatalf("the new version's sample through latest: %v", err)
	}
	waitFor(t, "an overlay for the new latest", func() bool { return m.root.Overlays() == 2 })
	if _, err := os.ReadFile(filepath.Join(m.dir, "version", "1", "shard", "0", "200.png")); err != nil {
		t.Fatalf("version/1 through its overlay: %v", err)
	}

	// Errors come through: EIO each time, never a stale success or ENOENT.
	tbl.Vacuum("b")
	for range 3 {
		if _, err := os.ReadFile(filepath.Join(m.dir, "version", "0", "shard", "0", "105.png")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("a vacuumed sample through the overlay: %v, want EIO", err)
		}
	}
	if _, err := os.Stat(filepath.Join(m.dir, ".deltafs", "stats")); err != nil {
		t.Fatal(err)
	}
}

// TestOverlaysCleanedAfterKill: the overlays a mount made are unmounted
// with it by `deltafs unmount`, also after the server was killed with
// SIGKILL (the FUSE mount then stale).
func TestOverlaysCleanedAfterKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts overlayfs")
	}
	bin := mounttest.Binary(t)
	table := "../testdata/delta/dat-basic_append"
	m := mounttest.Start(t, bin, table, "--cache-dir", "none")
	if _, err := os.ReadDir(filepath.Join(m.Dir, "version", "0", "shard", "0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "overlays of version/0 and latest", func() bool { return len(overlaysIn(m.Dir)) == 2 })
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if out, err := mounttest.Run(bin, "unmount", m.Dir); err != nil {
		t.Fatalf("deltafs unmount after kill -9: %v\n%s", err, out)
	}
	if mounttest.Mounted(m.Dir) || len(overlaysIn(m.Dir)) > 0 {
		t.Fatalf("left mounted: the mount %v, overlays %v", mounttest.Mounted(m.Dir), overlaysIn(m.Dir))
	}
}

// overlaysIn lists the overlay mounts under dir/version, from
// /proc/self/mountinfo (no stat: the FUSE mount may be stale).
func overlaysIn(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/version/") && strings.Contains(l, " - overlay ") {
			out = append(out, f[4])
		}
	}
	return out
}

// TestOverlayMountedByAChild: the overlay's mount(2) is made by a child
// process, never by the server, so that a server killed in the middle of
// it can exit (see the overlays' doc). A mount(8) placed first in PATH
// records who ran it.
func TestOverlayMountedByAChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts overlayfs")
	}
	real, err := exec.LookPath("mount")
	if err != nil {
		t.Fatal(err)
	}
	bin, rec := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$$ $PPID\" >> " + rec + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mount"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(4, 0)}}, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, time.Hour)
	t.Cleanup(func() { fusefs.UnmountOverlays(m.dir, true) })
	if err := m.root.StartOverlays(m.dir); err != nil {
		t.Fatal(err)
	}
	if n := m.root.Overlays(); n != 1 {
		t.Fatalf("%d overlays, want 1", n)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("mount(8) was not run: %v", err)
	}
	var pid, ppid int
	if _, err := fmt.Sscan(string(b), &pid, &ppid); err != nil || pid == os.Getpid() || ppid != os.Getpid() {
		t.Fatalf("mount(8) ran as %q, want a child of the server %d", b, os.Getpid())
	}
}

// TestKilledWhileStackingExits: a server killed with SIGKILL while it
// stacks overlays (each version directory walked into gets one) exits at
// once, every time. When the server made the overlay's mount(2) itself,
// a kill during it left the process unkillable, waiting for its own
// answer, and every sync(2) on the machine hung behind it.
func TestKilledWhileStackingExits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts overlayfs")
	}
	bin := mounttest.Binary(t)
	table := "../testdata/delta/kernelrs-compacted-log-files-table"
	for i := range 5 {
		m := mounttest.Start(t, bin, table, "--cache-dir", "none", "--prefill", "0")
		for v := range 20 {
			os.Stat(filepath.Join(m.Dir, "version", strconv.Itoa(v), "shard"))
		}
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		exited, _ := m.Wait(10 * time.Second)
		if !exited {
			abortConnection(t, m.Dir)
			t.Fatalf("round %d: the server killed while stacking overlays did not exit in 10 s", i)
		}
		if out, err := mounttest.Run(bin, "unmount", m.Dir); err != nil {
			t.Fatalf("deltafs unmount after kill -9: %v\n%s", err, out)
		}
	}
}

// abortConnection aborts the FUSE connection of the mount at dir (fusectl),
// which frees a server stuck waiting for its own answer.
func abortConnection(t *testing.T, dir string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		_, minor, _ := strings.Cut(f[2], ":")
		ctl := t.TempDir()
		if err := unix.Mount("fusectl", ctl, "fusectl", 0, ""); err != nil {
			t.Logf("fusectl: %v", err)
			return
		}
		defer unix.Unmount(ctl, unix.MNT_DETACH)
		if err := os.WriteFile(filepath.Join(ctl, minor, "abort"), []byte("1"), 0); err != nil {
			t.Logf("abort: %v", err)
		}
	}
}

// TestOverlayKeepsTheOtherPaths: with overlays stacked, what the overlay
// test above does not walk stays as it is: at/<time> leads into the
// version current then (through its overlay, no IOCTL per open, the same
// bytes); the tar view reads the same bytes as before the overlay hid the
// FUSE directory; and a listing past the --kernel-inodes budget (entries
// by name only) still lists every sample through the overlay and each
// reads its bytes.
func TestOverlayKeepsTheOtherPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it mounts overlayfs")
	}
	const n = 40
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(n, 0)}}, nil, nil)
	m := mountWith(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, fusefs.Options{Refresh: 50 * time.Millisecond, KernelInodes: 10})
	dir, root := m.dir, m.root
	t.Cleanup(func() {
		if fusefs.UnmountOverlays(dir, true) {
			t.Error("overlays left after UnmountOverlays")
		}
	})

	// The FUSE mount's own bytes, before any overlay.
	tarWant, err := os.ReadFile(filepath.Join(dir, "version", "0", "shard", "0.tar"))
	if err != nil || len(tarWant) == 0 {
		t.Fatalf("the tar view before the overlay: %d bytes, %v", len(tarWant), err)
	}
	want := map[string][]byte{}
	for i := range n {
		name := strconv.Itoa(i) + ".png"
		b, err := os.ReadFile(filepath.Join(dir, "version", "0", "shard", "0", name))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = b
	}

	if err := root.StartOverlays(dir); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(dir, "version", "0", "shard"), &st); err != nil || st.Type == unix.FUSE_SUPER_MAGIC {
		t.Fatalf("version/0/shard after the start: statfs type %#x (%v), want the overlay's", st.Type, err)
	}

	// at/<time>: a time after the commit leads to version/0, through its
	// overlay.
	at := filepath.Join(dir, "at", strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10))
	atDir, err := unix.Open(filepath.Join(at, "shard", "0"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatalf("at/<time>/shard/0: %v", err)
	}
	defer unix.Close(atDir)
	if err := unix.Fstatfs(atDir, &st); err != nil || st.Type == unix.FUSE_SUPER_MAGIC {
		t.Fatalf("at/<time>/shard/0: statfs type %#x (%v), want the overlay's", st.Type, err)
	}
	ioctls := root.Counters().Ioctls.Load()
	for _, name := range []string{"0.png", "7.png", "39.png"} {
		if got := isattyRead(t, atDir, name); !bytes.Equal(got, want[name]) {
			t.Fatalf("at/<time>/shard/0/%s: %d bytes differing from the mount's %d", name, len(got), len(want[name]))
		}
	}
	if got := root.Counters().Ioctls.Load() - ioctls; got != 0 {
		t.Fatalf("%d IOCTLs reached the server through at/<time>, want 0", got)
	}

	// The tar view through the overlay.
	if got, err := os.ReadFile(filepath.Join(dir, "version", "0", "shard", "0.tar")); err != nil || !bytes.Equal(got, tarWant) {
		t.Fatalf("the tar view through the overlay: %d bytes (%v), want the mount's %d", len(got), err, len(tarWant))
	}

	// A listing past the kernel inode budget, through the overlay.
	ents, err := os.ReadDir(filepath.Join(dir, "latest", "shard", "0"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range ents {
		w, ok := want[e.Name()]
		if !ok {
			continue
		}
		seen++
		if got, err := os.ReadFile(filepath.Join(dir, "latest", "shard", "0", e.Name())); err != nil || !bytes.Equal(got, w) {
			t.Fatalf("latest/shard/0/%s through the overlay: %v", e.Name(), err)
		}
	}
	if seen != n {
		t.Fatalf("the listing through the overlay named %d of the %d samples", seen, n)
	}
	if got := root.Counters().ListedPlus.Load(); got > 10 {
		t.Fatalf("%d entries listed with kernel inodes, past the budget of 10", got)
	}
}
