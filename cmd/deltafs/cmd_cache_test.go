package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/cache"
)

// fillCache writes n entries of 1000 bytes through the real cache.
func fillCache(t *testing.T, dir string, n int) {
	t.Helper()
	c, err := cache.New(cache.Options{Dir: dir, DiskBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		k := cache.Key{Kind: "page", Table: "t", File: "f", Unit: string(rune('a' + i))}
		if _, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return make([]byte, 1000), nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func execCache(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newCacheCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return squash(out.String()), err
}

func TestCacheStatsAndClear(t *testing.T) {
	dir := t.TempDir()
	fillCache(t, dir, 3)
	foreign := filepath.Join(dir, "deltafs-cache-v1", "mine.txt")
	if err := os.WriteFile(foreign, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := execCache(t, "stats", "--cache-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"directory " + filepath.Join(dir, "deltafs-cache-v1"),
		"entries 3\n",
		"size 24 KiB (24576 bytes)",
		"budget 64 MiB, 0% used, keeping 5% of the disk free (as last opened)",
		"disk free ",
		"other files 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}

	out, err = execCache(t, "clear", "--cache-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "removed 3 entries (24 KiB)") || !strings.Contains(out, "left 1 files that are not the cache's") {
		t.Errorf("clear output:\n%s", out)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("clear removed a file that is not the cache's: %v", err)
	}
	u, err := cache.DiskUsage(dir)
	if err != nil || u.Entries != 0 {
		t.Fatalf("after clear: %+v %v", u, err)
	}

	out, err = execCache(t, "stats", "--cache-dir", dir)
	if err != nil || !strings.Contains(out, "entries 0\n") || !strings.Contains(out, "budget unknown") {
		t.Errorf("stats after clear (%v):\n%s", err, out)
	}
}

func TestCacheEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	out, err := execCache(t, "stats", "--cache-dir", dir)
	if err != nil || !strings.Contains(out, "no cache here yet") {
		t.Errorf("stats of a missing cache (%v):\n%s", err, out)
	}
	out, err = execCache(t, "clear", "--cache-dir", dir)
	if err != nil || !strings.Contains(out, "no cache in") {
		t.Errorf("clear of a missing cache (%v):\n%s", err, out)
	}
}

func TestCacheDefaultDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	fillCache(t, filepath.Join(home, "deltafs"), 2)
	out, err := execCache(t, "stats")
	if err != nil || !strings.Contains(out, filepath.Join(home, "deltafs", "deltafs-cache-v1")) || !strings.Contains(out, "entries 2\n") {
		t.Errorf("stats with the default dir (%v):\n%s", err, out)
	}
}

func TestCacheUsage(t *testing.T) {
	_, err := execCache(t, "stats", "extra")
	var u usageError
	if !errors.As(err, &u) {
		t.Fatalf("extra argument: %v, want a usage error", err)
	}
}
