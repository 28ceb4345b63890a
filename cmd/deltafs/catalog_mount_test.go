package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// Catalog mounts through the binary: a schema (uc://CATALOG.SCHEMA), a
// catalog (uc://CATALOG) and a share (PROFILE.share, PROFILE.share#SHARE)
// list their tables without opening any, and each table's tree reads as a
// mount of the table by path.

// browseTables are the tables of the catalog mounts' tests.
var browseTables = []string{"dat-basic_append", "deltars-simple_table"}

// catalogFlags are the sample flags of the comparisons (mountedTree's).
var catalogFlags = []string{"--data-column", "-", "--shards", "2", "--cache-dir", "none"}

// requireSameTables checks that each table under dir reads as the table
// by path (local), every version's sample files.
func requireSameTables(t *testing.T, bin, dir string, local map[string]string, named func(string) string) {
	t.Helper()
	for _, name := range browseTables {
		want, refused := mountedTree(t, bin, local[name])
		if refused != "" {
			t.Fatalf("%s by path: %s", name, refused)
		}
		tdir := filepath.Join(dir, named(name))
		versions, err := os.ReadDir(filepath.Join(tdir, "version"))
		if err != nil || len(versions) != len(want) {
			t.Fatalf("%s: %d versions (%v), %d by path", name, len(versions), err, len(want))
		}
		for v, lines := range want {
			if got := versionTree(t, tdir, v); strings.Join(got, "\n") != strings.Join(lines, "\n") || len(lines) == 0 {
				t.Fatalf("%s version %s: sample files differ\ncatalog: %q\npath:    %q", name, v, got, lines)
			}
		}
		if link, err := os.Readlink(filepath.Join(tdir, "latest")); err != nil || !strings.HasPrefix(link, "version/") {
			t.Fatalf("%s/latest -> %q, %v", name, link, err)
		}
	}
}

// TestCatalogMountUC: uc://main.default lists its tables without reading
// any (no load, no vend, no S3 request), reads each as by path, drops a
// table the catalog drops, and serves EIO (one log line) for a table
// that cannot be opened while the others serve; uc://main shows the
// schemas first.
func TestCatalogMountUC(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	f := startUC(t, time.Minute, browseTables)
	// A table whose location holds nothing: it cannot be opened.
	f.uc.AddTable("main.default.broken", unitytest.ManagedLocation("lake"))
	flags := append(append([]string{"--refresh", "1s"}, catalogFlags...), s3Flags(f.endpoint)...)
	m := mounttest.StartCatalog(t, bin, "uc://main.default", flags...)
	names := testkit.DirNames(t, m.Dir)
	want := []string{"broken", ucTable(browseTables[0]), ucTable(browseTables[1])}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("uc://main.default lists %v, want %v", names, want)
	}
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(m.Dir, n)); err != nil || !fi.IsDir() {
			t.Fatalf("stat %s: %v", n, err)
		}
	}
	if f.uc.Loads.Load() != 0 || f.uc.Vended.Load() != 0 || f.uc.Accepted.Load() != 0 {
		t.Fatalf("listing the schema read tables: %d loads, %d vends, %d S3 requests", f.uc.Loads.Load(), f.uc.Vended.Load(), f.uc.Accepted.Load())
	}
	requireSameTables(t, bin, m.Dir, f.local, ucTable)

	for range 3 {
		if _, err := os.ReadDir(filepath.Join(m.Dir, "broken")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("broken table: %v, want EIO", err)
		}
		if _, err := os.ReadDir(filepath.Join(m.Dir, ucTable(browseTables[0]), "version")); err != nil {
			t.Fatalf("a good table beside the broken one: %v", err)
		}
	}
	if n := strings.Count(m.Log(), "table cannot be opened"); n != 1 || !strings.Contains(m.Log(), "where=uc://main.default.broken ") {
		t.Fatalf("%d lines about the broken table, want 1 naming it:\n%s", n, m.Log())
	}
	for _, l := range strings.Split(m.Log(), "\n") {
		if strings.Contains(l, "table cannot be opened") {
			t.Log(l)
		}
	}

	// Dropped while mounted: gone at the next listing, and ENOENT.
	dropped := filepath.Join(m.Dir, ucTable(browseTables[1]))
	f.uc.DropTable(ucName(browseTables[1]))
	waitDropped(t, dropped)
	if !strings.Contains(m.Log(), "table no longer listed; released") {
		t.Fatalf("no line about the dropped table:\n%s", m.Log())
	}

	// The catalog: schemas, then tables.
	c := mounttest.StartCatalog(t, bin, "uc://main", flags...)
	if got := testkit.DirNames(t, c.Dir); fmt.Sprint(got) != "[default]" {
		t.Fatalf("uc://main lists %v", got)
	}
	if _, err := os.ReadDir(filepath.Join(c.Dir, "default", ucTable(browseTables[0]), "version", "0")); err != nil {
		t.Fatal(err)
	}
}

// ucTable is the table's name in the schema (ucName's last part).
func ucTable(name string) string { return strings.TrimPrefix(ucName(name), "main.default.") }

// TestCatalogMountSharing: PROFILE.share lists shares, schemas and tables
// without a request to any table, leaves out names that cannot be a
// directory (one line), reads each table as by path, drops a table the
// server stops sharing, and serves EIO (one log line) for a table the
// server cannot serve while the others serve; PROFILE.share#SHARE shows
// the share's schemas first.
func TestCatalogMountSharing(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	f := startSharing(t, 20*time.Second, browseTables)
	f.srv.AddTable(t, "share", "default", "broken", t.TempDir()) // no log: the server refuses its queries
	f.srv.SetListExtra("..", "a/b")
	f.srv.SetListPage(1) // every name its own page
	flags := append([]string{"--refresh", "1s"}, catalogFlags...)
	m := mounttest.StartCatalog(t, bin, f.profile, flags...)
	if got := testkit.DirNames(t, m.Dir); fmt.Sprint(got) != "[share]" {
		t.Fatalf("%s lists %v", f.profile, got)
	}
	if got := testkit.DirNames(t, filepath.Join(m.Dir, "share")); fmt.Sprint(got) != "[default]" {
		t.Fatalf("share lists %v", got)
	}
	dir := filepath.Join(m.Dir, "share", "default")
	want := []string{"broken", sharedName(browseTables[0]), sharedName(browseTables[1])}
	if got := testkit.DirNames(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("share/default lists %v, want %v", got, want)
	}
	if n := f.srv.TableRequests.Load(); n != 0 || f.srv.ListRequests() < 5 {
		t.Fatalf("listing made %d table requests (%d listing requests)", n, f.srv.ListRequests())
	}
	if n := strings.Count(m.Log(), "leaves out"); n != 1 {
		t.Fatalf("%d lines about the names left out, want 1:\n%s", n, m.Log())
	}
	requireSameTables(t, bin, dir, f.local, sharedName)

	for range 3 {
		if _, err := os.ReadDir(filepath.Join(dir, "broken")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("broken table: %v, want EIO", err)
		}
		if _, err := os.ReadDir(filepath.Join(dir, sharedName(browseTables[0]), "version")); err != nil {
			t.Fatalf("a good table beside the broken one: %v", err)
		}
	}
	if n := strings.Count(m.Log(), "table cannot be opened"); n != 1 || !strings.Contains(m.Log(), "where="+f.profile+"#share.default.broken ") {
		t.Fatalf("%d lines about the broken table, want 1 naming it:\n%s", n, m.Log())
	}

	dropped := filepath.Join(dir, sharedName(browseTables[1]))
	f.srv.DropTable("share", "default", sharedName(browseTables[1]))
	waitDropped(t, dropped)

	// A table shared while mounted appears at the next listing.
	late := t.TempDir()
	if err := os.CopyFS(late, os.DirFS(f.local[browseTables[0]])); err != nil {
		t.Fatal(err)
	}
	f.srv.AddTable(t, "share", "default", "late", late)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := os.ReadDir(filepath.Join(dir, "late", "version", "0"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a table shared while mounted is not there after 20s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A signal unmounts cleanly, every table closed.
	if err := m.Stop(); err != nil || mounttest.Mounted(m.Dir) {
		t.Fatalf("stop: %v (mounted %v)\n%s", err, mounttest.Mounted(m.Dir), m.Log())
	}

	// One share: its schemas, then tables.
	s := mounttest.StartCatalog(t, bin, f.profile+"#share", flags...)
	if got := testkit.DirNames(t, s.Dir); fmt.Sprint(got) != "[default]" {
		t.Fatalf("%s#share lists %v", f.profile, got)
	}
	if _, err := os.ReadDir(filepath.Join(s.Dir, "default", sharedName(browseTables[0]), "version", "0")); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogMountUsage: flags a catalog mount does not serve, and bad
// sample flags, are usage errors (exit 2) before any listing.
func TestCatalogMountUsage(t *testing.T) {
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Minute, "k", "s")
	ucEnv(t, uc)
	mnt := t.TempDir()
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--xattrs"}, "--xattrs is not served by a catalog mount"},
		{[]string{"--metrics-addr", "127.0.0.1:0"}, "--metrics-addr is not served by a catalog mount"},
		{[]string{"--shards", "0"}, "--shards 0"},
	} {
		before := uc.Requests.Load()
		_, stderr, code := runBin(t, bin, time.Minute, append([]string{"mount", "uc://main.default", mnt}, tc.flags...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.flags, code, stderr, tc.want)
		}
		if n := uc.Requests.Load() - before; n != 0 {
			t.Errorf("%v: %d catalog requests before the usage error", tc.flags, n)
		}
	}
}

// TestCatalogMountUCRenewal: each table of a schema mount keeps its own
// vended credentials and renews them: reads past their lifetime work,
// and S3 never sees an expired session.
func TestCatalogMountUCRenewal(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	f := startUC(t, 6*time.Second, browseTables)
	// Polled every second: S3 requests go on past the credentials' life.
	flags := append(append([]string{"--mem-cache", "0", "--refresh", "1s"}, catalogFlags...), s3Flags(f.endpoint)...)
	m := mounttest.StartCatalog(t, bin, "uc://main.default", flags...)
	read := func() {
		for _, name := range browseTables {
			if lines := versionTree(t, filepath.Join(m.Dir, ucTable(name)), "0"); len(lines) == 0 {
				t.Fatalf("%s: no samples", name)
			}
		}
	}
	read()
	vends := f.uc.Vended.Load()
	if vends != 2 {
		t.Fatalf("%d credentials vended for two tables, want 2", vends)
	}
	before := f.uc.Accepted.Load()
	time.Sleep(8 * time.Second) // past the first credentials' life
	read()
	if f.uc.Accepted.Load() <= before {
		t.Fatal("no S3 request after the first credentials' life: nothing was renewed")
	}
	if n := f.uc.Vended.Load(); n < 4 {
		t.Fatalf("%d credentials vended in all, want each table renewed at least once", n)
	}
	if f.uc.Expired.Load() != 0 || f.uc.Refused.Load() != 0 || f.uc.Accepted.Load() == 0 {
		t.Fatalf("S3: %d expired, %d refused, %d accepted", f.uc.Expired.Load(), f.uc.Refused.Load(), f.uc.Accepted.Load())
	}
}

// TestCatalogMountRefused: a catalog whose first listing fails (a refused
// token) is not mounted: exit 1, one line naming the catalog and why.
func TestCatalogMountRefused(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Minute, "k", "s")
	uc.AddTable("main.default.t", "s3://lake/t")
	ucEnv(t, uc)
	t.Setenv("UC_TOKEN", "wrong-token-0123456789")
	mnt := mounttest.Mountpoint(t)
	_, stderr, code := runBin(t, bin, time.Minute, "mount", "uc://main.default", mnt)
	line := requireErrorLine(t, stderr, code, "uc://main.default", -1, []string{"listing the tables", "refuses the token"})
	if strings.Contains(stderr, "wrong-token-0123456789") || mounttest.Mounted(mnt) {
		t.Fatalf("token shown or left mounted: %s", line)
	}
	t.Log(line)

	srv := sharingtest.Start(t, time.Minute)
	profile := filepath.Join(t.TempDir(), "p.share")
	srv.WriteProfile(t, profile, "wrong-token-0123456789")
	_, stderr, code = runBin(t, bin, time.Minute, "mount", profile+"#s", mnt)
	line = requireErrorLine(t, stderr, code, profile+"#s", -1, []string{"listing /shares/s/schemas", "401"})
	if strings.Contains(stderr, "wrong-token-0123456789") || mounttest.Mounted(mnt) {
		t.Fatalf("token shown or left mounted: %s", line)
	}
	t.Log(line)
}

// waitDropped waits (20 s at most) until the dropped table's directory
// is gone from its catalog mount, and checks that what was under it
// answers ENOENT.
func waitDropped(t *testing.T, dropped string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := os.Stat(dropped)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dropped table still there after 20s: %v", err)
		}
	}
	if _, err := os.ReadDir(filepath.Join(dropped, "version")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dropped table's version/: %v, want ENOENT", err)
	}
}
