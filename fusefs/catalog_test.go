package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// fakeCatalog is a catalog of sampletest tables by path (schema/table),
// whose listings a test can change or make hostile.
type fakeCatalog struct {
	mu      sync.Mutex
	tables  map[string]*sampletest.Table // "schema/table"
	broken  map[string]error             // Open fails with this
	extra   map[string][]string          // names added to a listing as given (hostile)
	listErr error
	lists   atomic.Int64
	opens   atomic.Int64
	closed  atomic.Int64
}

func newFakeCatalog() *fakeCatalog {
	return &fakeCatalog{tables: map[string]*sampletest.Table{}, broken: map[string]error{}, extra: map[string][]string{}}
}

func (f *fakeCatalog) add(path string, tbl *sampletest.Table) {
	f.mu.Lock()
	f.tables[path] = tbl
	f.mu.Unlock()
}

func (f *fakeCatalog) remove(path string) {
	f.mu.Lock()
	delete(f.tables, path)
	f.mu.Unlock()
}

func (f *fakeCatalog) list(ctx context.Context, path []string) ([]string, error) {
	f.lists.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	seen := map[string]bool{}
	var out []string
	prefix := strings.Join(path, "/")
	for p := range f.tables {
		parts := strings.Split(p, "/")
		if strings.Join(parts[:len(path)], "/") != prefix {
			continue
		}
		if n := parts[len(path)]; !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return append(out, f.extra[prefix]...), nil
}

type closeCounter struct{ n *atomic.Int64 }

func (c closeCounter) Close() error { c.n.Add(1); return nil }

func (f *fakeCatalog) open(spec sample.Spec) func(ctx context.Context, path []string) (*sample.Samples, io.Closer, error) {
	return func(ctx context.Context, path []string) (*sample.Samples, io.Closer, error) {
		f.opens.Add(1)
		p := strings.Join(path, "/")
		f.mu.Lock()
		tbl, err := f.tables[p], f.broken[p]
		f.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		if tbl == nil {
			return nil, nil, errors.New("no such table")
		}
		s, err := sample.New(tbl.Options(spec))
		if err != nil {
			return nil, nil, err
		}
		return s, closeCounter{&f.closed}, nil
	}
}

// eventually waits up to d for ok.
func eventually(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v", d)
		}
	}
}

var catSpec = sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, Shards: 2}

func mountCatalog(t *testing.T, f *fakeCatalog, levels int, refresh time.Duration) (string, *fusefs.Catalog, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	cat, err := fusefs.NewCatalog(context.Background(), fusefs.CatalogOptions{
		Table: fusefs.Options{Refresh: refresh, Logger: slog.New(slog.NewTextHandler(logs, nil))},
		Name:  "main", Levels: levels, List: f.list, Open: f.open(catSpec),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	dir := mounttest.InProcessRaw(t, cat, cat.MountOptions("uc://main", false, false))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go cat.Run(ctx)
	return dir, cat, logs
}

func catTable(n, base int) *sampletest.Table {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: digits(n, base)}}, nil, nil)
	return tbl
}

// TestCatalogListsWithoutOpening: listing a schema of 1,000 tables opens
// none; entering one opens it alone and serves exactly what a table mount
// serves.
func TestCatalogListsWithoutOpening(t *testing.T) {
	mounttest.RequireFUSE(t)
	f := newFakeCatalog()
	for i := range 1000 {
		f.add(fmt.Sprintf("s1/t%04d", i), catTable(3, i*10))
	}
	f.add("s2/digits", catTable(30, 0))
	dir, cat, _ := mountCatalog(t, f, 2, time.Hour)

	if got := testkit.DirNames(t, dir); fmt.Sprint(got) != "[s1 s2]" {
		t.Fatalf("root: %v", got)
	}
	names := testkit.DirNames(t, filepath.Join(dir, "s1"))
	if len(names) != 1000 || names[0] != "t0000" || names[999] != "t0999" {
		t.Fatalf("s1: %d names, %v...", len(names), names[:min(3, len(names))])
	}
	// ls -l: every table's directory stats without opening.
	for _, n := range names[:50] {
		if fi, err := os.Stat(filepath.Join(dir, "s1", n)); err != nil || !fi.IsDir() {
			t.Fatalf("stat %s: %v", n, err)
		}
	}
	if n := f.opens.Load(); n != 0 || cat.Tables() != 0 {
		t.Fatalf("listing opened %d tables (%d open)", n, cat.Tables())
	}

	// Entering one table opens it, and its tree is a table mount's.
	tdir := filepath.Join(dir, "s2", "digits")
	if got := testkit.DirNames(t, tdir); fmt.Sprint(got) != "[.deltafs at latest version]" {
		t.Fatalf("table dir: %v", got)
	}
	if f.opens.Load() != 1 || cat.Tables() != 1 {
		t.Fatalf("opens %d, open tables %d; want 1", f.opens.Load(), cat.Tables())
	}
	if target, err := os.Readlink(filepath.Join(tdir, "latest")); err != nil || target != "version/0" {
		t.Fatalf("latest -> %q, %v", target, err)
	}
	m := mount(t, catTable(30, 0), catSpec, time.Hour)
	for k := range 2 {
		rel := filepath.Join("version", "0", "shard", fmt.Sprint(k))
		want := testkit.DirNames(t, filepath.Join(m.dir, rel))
		got := testkit.DirNames(t, filepath.Join(tdir, rel))
		if fmt.Sprint(got) != fmt.Sprint(want) || len(got) < 5 {
			t.Fatalf("shard %d: %v, want %v", k, got, want)
		}
		for _, n := range got {
			a, err1 := os.ReadFile(filepath.Join(tdir, rel, n))
			b, err2 := os.ReadFile(filepath.Join(m.dir, rel, n))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s/%s: %d bytes %v, table mount %d bytes %v", rel, n, len(a), err1, len(b), err2)
			}
		}
	}
	// Another table's nodes have their own ids.
	a, err1 := os.Stat(filepath.Join(dir, "s1", "t0001", "version", "0"))
	b, err2 := os.Stat(filepath.Join(dir, "s1", "t0002", "version", "0"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if a.Sys().(*syscall.Stat_t).Ino == b.Sys().(*syscall.Stat_t).Ino {
		t.Fatal("two tables' version/0 share an inode number")
	}
	if f.opens.Load() != 3 {
		t.Fatalf("opens %d, want 3", f.opens.Load())
	}
}

// TestCatalogRefresh: a table added appears, one dropped disappears (and
// is released) at the next listing.
func TestCatalogRefresh(t *testing.T) {
	mounttest.RequireFUSE(t)
	f := newFakeCatalog()
	f.add("s/a", catTable(4, 0))
	f.add("s/b", catTable(4, 100))
	dir, _, logs := mountCatalog(t, f, 2, 200*time.Millisecond)
	sdir := filepath.Join(dir, "s")
	if got := testkit.DirNames(t, sdir); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("s: %v", got)
	}
	held := filepath.Join(sdir, "b", "version", "0", "shard", "0")
	if _, err := os.ReadDir(held); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdir, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("c before it exists: %v", err)
	}
	f.add("s/c", catTable(4, 200))
	f.remove("s/b")
	eventually(t, 10*time.Second, func() bool {
		return fmt.Sprint(testkit.DirNames(t, sdir)) == "[a c]"
	})
	if _, err := os.ReadDir(filepath.Join(sdir, "c", "version", "0")); err != nil {
		t.Fatalf("new table: %v", err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(sdir, "b"))
		return errors.Is(err, os.ErrNotExist)
	})
	if f.closed.Load() != 1 {
		t.Fatalf("dropped table closed %d times, want 1", f.closed.Load())
	}
	if !strings.Contains(logs.String(), "table no longer listed; released") {
		t.Fatalf("no drop line in:\n%s", logs)
	}
	// Back under the same name: a new table, served afresh.
	f.add("s/b", catTable(2, 500))
	eventually(t, 10*time.Second, func() bool {
		_, err := os.ReadDir(filepath.Join(sdir, "b", "version", "0"))
		return err == nil
	})
}

// TestCatalogBrokenTable: a table that cannot be opened answers EIO with
// one log line, however often it is tried, while the others serve.
func TestCatalogBrokenTable(t *testing.T) {
	mounttest.RequireFUSE(t)
	f := newFakeCatalog()
	f.add("s/good", catTable(4, 0))
	f.add("s/bad", catTable(4, 0))
	f.broken["s/bad"] = errors.New("uc://main.s.bad: the catalog refuses: 403 PERMISSION_DENIED")
	dir, _, logs := mountCatalog(t, f, 2, 200*time.Millisecond)
	for range 5 {
		if _, err := os.ReadDir(filepath.Join(dir, "s", "bad")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("broken table: %v, want EIO", err)
		}
		if _, err := os.ReadDir(filepath.Join(dir, "s", "good", "version", "0")); err != nil {
			t.Fatalf("good table: %v", err)
		}
		time.Sleep(150 * time.Millisecond) // across listings: tried again
	}
	if n := strings.Count(logs.String(), "PERMISSION_DENIED"); n != 1 {
		t.Fatalf("%d log lines name the cause, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "main.s.bad") {
		t.Fatalf("the log line does not name the table:\n%s", logs)
	}
	f.mu.Lock()
	delete(f.broken, "s/bad")
	f.mu.Unlock()
	eventually(t, 10*time.Second, func() bool {
		_, err := os.ReadDir(filepath.Join(dir, "s", "bad", "version"))
		return err == nil
	})
}

// TestCatalogHostileListings: names that are not one path component, and
// duplicates, are left out (one log line); a huge listing and a failing one
// fail closed.
func TestCatalogHostileListings(t *testing.T) {
	mounttest.RequireFUSE(t)
	f := newFakeCatalog()
	f.add("s/ok", catTable(2, 0))
	f.extra["s"] = []string{"..", ".", "", "a/b", "nul\x00x", "ok", "dup", "dup", strings.Repeat("x", 256), "\xff"}
	dir, _, logs := mountCatalog(t, f, 2, time.Hour)
	if got := testkit.DirNames(t, filepath.Join(dir, "s")); fmt.Sprint(got) != "[]" {
		t.Fatalf("s: %v (ok is listed twice: left out)", got)
	}
	if n := strings.Count(logs.String(), "leaves out"); n != 1 {
		t.Fatalf("%d lines about names left out, want 1:\n%s", n, logs)
	}
	for _, n := range []string{"dup", "ok"} {
		if _, err := os.Stat(filepath.Join(dir, "s", n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v", n, err)
		}
	}

	// A listing past the bound, and a failing listing, give EIO.
	f2 := newFakeCatalog()
	f2.add("s/t", catTable(2, 0))
	many := make([]string, fusefs.DefaultCatalogEntries+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	f2.extra["s"] = many
	dir2, _, logs2 := mountCatalog(t, f2, 2, time.Hour)
	if _, err := os.ReadDir(filepath.Join(dir2, "s")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("huge listing: %v, want EIO", err)
	}
	if !strings.Contains(logs2.String(), "more than 100000") {
		t.Fatalf("no line about the bound:\n%s", logs2)
	}
	f3 := newFakeCatalog()
	f3.listErr = errors.New("403 PERMISSION_DENIED")
	if _, err := fusefs.NewCatalog(context.Background(), fusefs.CatalogOptions{Name: "main", Levels: 2, List: f3.list, Open: f3.open(catSpec)}); err == nil || !strings.Contains(err.Error(), "PERMISSION_DENIED") {
		t.Fatalf("failing first listing: %v", err)
	}
}
