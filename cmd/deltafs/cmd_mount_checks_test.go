package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// runDF runs the deltafs binary with env added to (or, for "NAME=" with
// drop, removed from) the environment, bounded by 60 s. Should a command
// that was to be refused mount after all, mnt (when given) is unmounted.
// It returns stdout and stderr together and the exit status.
func runDF(t *testing.T, env []string, mnt string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mounttest.Binary(t), args...)
	cmd.Env = withEnv(os.Environ(), env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if mnt != "" && mounttest.Mounted(mnt) {
		mounttest.Unmount(mnt)
		t.Errorf("deltafs %v left %s mounted", args, mnt)
	}
	if ctx.Err() != nil {
		t.Fatalf("deltafs %v did not end within 60 s:\n%s", args, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("deltafs %v: %v", args, err)
	return "", 0
}

// withEnv sets the NAME=VALUE entries of set in env; "NAME=" removes NAME.
func withEnv(env, set []string) []string {
	out := append([]string(nil), env...)
	for _, kv := range set {
		name, value, _ := strings.Cut(kv, "=")
		kept := out[:0]
		for _, e := range out {
			if !strings.HasPrefix(e, name+"=") {
				kept = append(kept, e)
			}
		}
		out = kept
		if value != "" {
			out = append(out, kv)
		}
	}
	return out
}

// wantRefusal checks a refused command: exit status code and exactly one
// output line, equal to want.
func wantRefusal(t *testing.T, what string, out string, code, wantCode int, want string) {
	t.Helper()
	if code != wantCode || strings.TrimRight(out, "\n") != want {
		t.Errorf("%s: exit %d, output:\n%s\nwant exit %d and the one line:\n%s", what, code, out, wantCode, want)
	}
}

// firstDataFile is the first data file of an imported table (the one the
// --image check reads).
func firstDataFile(t *testing.T, table string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(table, "*.parquet"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no data file in %s: %v", table, err)
	}
	sort.Strings(m)
	return filepath.Base(m[0])
}

// TestMountImageShape: --image 32x32 (or 28x28x3) on a table of 28x28
// digits is refused before mounting, by mount and by warm, with exit 1 and
// one line naming the table, version, file, the length found and the shape
// asked. The right shape mounts.
func TestMountImageShape(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:300], 100)
	file := firstDataFile(t, table)
	for _, tc := range []struct{ image, want string }{
		{"32x32", "--image 32x32 needs 1024-byte values (32x32x1), but column pixels holds 784 bytes"},
		{"28x28x3", "--image 28x28x3 needs 2352-byte values (28x28x3), but column pixels holds 784 bytes"},
	} {
		want := fmt.Sprintf("deltafs: %s version 0: %s: %s", table, file, tc.want)
		mnt := t.TempDir()
		out, code := runDF(t, nil, mnt, "mount", table, mnt, "--image", tc.image, "--cache-dir", "none")
		wantRefusal(t, "mount --image "+tc.image, out, code, 1, want)
		out, code = runDF(t, nil, "", "warm", table, "--version", "0", "--image", tc.image, "--cache-dir", t.TempDir(), "--quiet")
		wantRefusal(t, "warm --image "+tc.image, out, code, 1, want)
	}
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--cache-dir", "none")
	if b, err := os.ReadFile(filepath.Join(m.Dir, "version", "0", "shard", "0", "60000.png")); err != nil || len(b) != 880 {
		t.Fatalf("the right shape: %d bytes, %v", len(b), err)
	}
}

// TestMountImageEmptyTable: a table without rows has nothing to check
// --image against, and mounts.
func TestMountImageEmptyTable(t *testing.T) {
	table := t.TempDir()
	log := filepath.Join(table, "_delta_log")
	if err := os.Mkdir(log, 0o755); err != nil {
		t.Fatal(err)
	}
	schema := `{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"pixels\",\"type\":\"binary\",\"nullable\":true,\"metadata\":{}}]}`
	commit := `{"commitInfo":{"timestamp":1700000000000,"operation":"CREATE TABLE"}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"5f2c0c1e-0000-4000-8000-000000000001","format":{"provider":"parquet","options":{}},"schemaString":"` + schema + `","partitionColumns":[],"configuration":{},"createdTime":1700000000000}}
`
	if err := os.WriteFile(filepath.Join(log, "00000000000000000000.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mounttest.Start(t, mounttest.Binary(t), table, "--image", "28x28", "--cache-dir", "none")
	if got := testkit.DirNames(t, filepath.Join(m.Dir, "version", "0", "shard", "0")); fmt.Sprint(got) != "[_samples.tsv]" {
		t.Fatalf("empty table's shard: %v", got)
	}
}

// TestMountNonEmptyMountpoint: a mount over a directory holding files is
// refused (it would hide them); --nonempty mounts anyway, and the files
// are there again after the unmount.
func TestMountNonEmptyMountpoint(t *testing.T) {
	mounttest.RequireFUSE(t)
	table := "../../testdata/delta/dat-basic_append"
	mnt := t.TempDir()
	if err := os.WriteFile(filepath.Join(mnt, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runDF(t, nil, mnt, "mount", table, mnt, "--cache-dir", "none")
	wantRefusal(t, "mount over a file", out, code, 1,
		"deltafs: mount point "+mnt+" is not empty (it holds notes.txt, ...): the mount would hide its files; use an empty directory, or --nonempty to mount over them")

	m, err := mounttest.StartAt(mounttest.Binary(t), table, mnt, "--cache-dir", "none", "--nonempty")
	if m != nil {
		t.Cleanup(func() {
			_ = m.Stop()
			if mounttest.Mounted(mnt) {
				mounttest.Unmount(mnt)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("notes.txt under the mount: %v", err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("after the unmount: %q %v", b, err)
	}
}

// TestSizeFlags: every size flag reads sizes alike and says so alike when
// it cannot; --cache-size 0 (which the cache would read as its 10 GiB
// default) is refused with the way to have no disk cache; --mem-cache 0 and --read-ahead-bytes 0 mean none, and
// such a mount serves the right bytes.
func TestSizeFlags(t *testing.T) {
	table := "../../testdata/delta/dat-basic_append"
	for _, cmd := range [][]string{{"mount", table, "MNT"}, {"warm", table, "--version", "0"}} {
		for _, tc := range []struct{ flag, value, want string }{
			{"--cache-size", "garbage", `deltafs: --cache-size "garbage": want a size such as 10GiB or 500MB`},
			{"--cache-size", "", `deltafs: --cache-size "": want a size such as 10GiB or 500MB`},
			{"--cache-size", "-1GiB", `deltafs: --cache-size "-1GiB": want a size such as 10GiB or 500MB`},
			{"--cache-size", "20EiB", `deltafs: --cache-size "20EiB": want a size such as 10GiB or 500MB`},
			{"--mem-cache", "lots", `deltafs: --mem-cache "lots": want a size such as 10GiB or 500MB`},
			{"--read-ahead-bytes", "1x", `deltafs: --read-ahead-bytes "1x": want a size such as 10GiB or 500MB`},
			{"--cache-size", "0", "deltafs: --cache-size 0: a disk cache needs room; use --cache-dir none for no disk cache"},
			{"--cache-size", "0GiB", "deltafs: --cache-size 0GiB: a disk cache needs room; use --cache-dir none for no disk cache"},
		} {
			mnt := ""
			args := append([]string(nil), cmd...)
			if args[0] == "mount" {
				mnt = t.TempDir()
				args[2] = mnt
			}
			args = append(args, tc.flag, tc.value, "--cache-dir", t.TempDir())
			out, code := runDF(t, nil, mnt, args...)
			wantRefusal(t, fmt.Sprintf("%s %s %q", cmd[0], tc.flag, tc.value), out, code, 2, tc.want)
		}
	}

	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)[:50]
	tbl := importDigits(t, bin, digits, 50)
	m := mounttest.Start(t, bin, tbl, "--image", "28x28", "--mem-cache", "0", "--read-ahead-bytes", "0", "--cache-size", "1MiB", "--cache-dir", t.TempDir())
	for i := range 2 { // twice: the second read comes from the disk cache
		b, err := os.ReadFile(filepath.Join(m.Dir, "version", "0", "shard", "0", "60000.png"))
		if err != nil || len(b) != 880 {
			t.Fatalf("read %d with --mem-cache 0: %d bytes, %v", i, len(b), err)
		}
	}
}

// readOnlyDir mounts a read-only tmpfs at a fresh directory (unmounted in
// t.Cleanup): root ignores permission bits, so only a read-only
// filesystem refuses it a write.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=1m"); err != nil {
		t.Fatalf("mount a read-only tmpfs (the tests run as root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestCacheDirUnusable: a default cache directory that cannot be created
// (HOME and XDG_CACHE_HOME on a read-only filesystem), none at all (both
// unset), or a --cache-dir that cannot be written fails mount and warm
// with exit 1 and one line that says why and which flag to give.
func TestCacheDirUnusable(t *testing.T) {
	table := "../../testdata/delta/dat-basic_append"
	ro := readOnlyDir(t)
	roEnv := []string{"HOME=" + ro, "XDG_CACHE_HOME=" + filepath.Join(ro, "cache")}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"read-only default", roEnv, nil, "deltafs: the default disk cache directory cannot be used: cache directory " +
			filepath.Join(ro, "cache", "deltafs", "deltafs-cache-v1") + ": mkdir " + filepath.Join(ro, "cache") +
			": read-only file system; give a writable --cache-dir DIR, or --cache-dir none for no disk cache"},
		{"no default", []string{"HOME=", "XDG_CACHE_HOME="}, nil, "deltafs: no default disk cache directory (no user cache directory: neither $XDG_CACHE_HOME nor $HOME are defined): give --cache-dir DIR, or --cache-dir none for no disk cache"},
		{"read-only --cache-dir", nil, []string{"--cache-dir", ro}, "deltafs: --cache-dir " + ro + ": cache directory " +
			filepath.Join(ro, "deltafs-cache-v1") + ": mkdir " + filepath.Join(ro, "deltafs-cache-v1") +
			": read-only file system; give a writable directory, or --cache-dir none for no disk cache"},
	} {
		mnt := t.TempDir()
		out, code := runDF(t, tc.env, mnt, append([]string{"mount", table, mnt}, tc.args...)...)
		wantRefusal(t, "mount, "+tc.name, out, code, 1, tc.want)
		out, code = runDF(t, tc.env, "", append([]string{"warm", table, "--version", "0", "--quiet"}, tc.args...)...)
		wantRefusal(t, "warm, "+tc.name, out, code, 1, tc.want)
	}
	// The hint works: --cache-dir none mounts with the same environment.
	mnt := t.TempDir()
	cmd := exec.Command(mounttest.Binary(t), "mount", table, mnt, "--cache-dir", "none")
	cmd.Env = withEnv(os.Environ(), roEnv)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if mounttest.Mounted(mnt) {
			mounttest.Unmount(mnt)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Lstat(filepath.Join(mnt, "latest")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("--cache-dir none did not mount:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMountStatfsFsync: on a mount by the binary, statfs gives the block
// size and NAME_MAX (as syscall.Statfs, getconf and df see them), fsync on
// a sample succeeds, and .deltafs/ is a read-only directory of today.
func TestMountStatfsFsync(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:100], 100)
	start := time.Now().Add(-time.Second)
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--cache-dir", "none")

	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Join(m.Dir, "latest", "shard", "0"), &st); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(table, firstDataFile(t, table)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Bsize != 4096 || st.Namelen != 255 || st.Blocks != uint64(fi.Size()+4095)/4096 || st.Files != 100 || st.Bfree != 0 {
		t.Errorf("statfs: %+v; want 4 KiB blocks, %d of them (the data file's %d bytes), 100 files, NAME_MAX 255, none free", st, (fi.Size()+4095)/4096, fi.Size())
	}
	if out, err := exec.Command("getconf", "NAME_MAX", m.Dir).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "255" {
		t.Errorf("getconf NAME_MAX: %q %v", out, err)
	}
	// df lists the mount (a filesystem with no blocks is left out). Only
	// deltafs mounts are asked (another machine-wide mount that hangs
	// would hang df), within a bound; the exit status is not asked: another
	// broken deltafs mount makes it 1, and says nothing of this one.
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(dctx, "df", "-P", "-t", "fuse.deltafs").Output()
	if !strings.Contains(string(out), " "+m.Dir+"\n") {
		t.Errorf("df does not list %s: %v\n%s", m.Dir, err, out)
	}

	f, err := os.Open(filepath.Join(m.Dir, "version", "0", "shard", "0", "60000.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Errorf("fsync on a sample: %v", err)
	}
	meta, err := os.Stat(filepath.Join(m.Dir, ".deltafs"))
	if err != nil || meta.Mode().Perm() != 0o555 || meta.ModTime().Before(start) {
		t.Errorf(".deltafs: %v %v %v; want mode 0555 and the mount's time", meta.Mode(), meta.ModTime(), err)
	}
}
