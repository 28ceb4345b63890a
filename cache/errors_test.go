package cache

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

// keyLeaks lists the parts of a key's text that must not reach an error or
// a log line at info level or above: the key is internal.
func keyLeaks(s string, k Key) []string {
	var leaks []string
	for _, part := range []string{"kind=", "table=", "unit=", k.Table, k.File, k.Column} {
		if strings.Contains(s, part) {
			leaks = append(leaks, part)
		}
	}
	return leaks
}

// TestFetchErrorIsTheFetchersOwn: a failed fetch returns the fetcher's error
// as it is (it names the table, version and file), without the cache key
// or a "cache: fetch" prefix; the key goes to the debug log only.
func TestFetchErrorIsTheFetchersOwn(t *testing.T) {
	lb := &testkit.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := open(t, Options{MemBytes: 1 << 20, Dir: t.TempDir(), MinFreeFraction: -1, Logger: log})
	cause := errors.New("t1 version 3: part-00000.parquet: unexpected EOF")
	k := key(7)
	_, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return nil, cause })
	if err != cause {
		t.Fatalf("Get: %v, want the fetcher's error unchanged", err)
	}
	_, err = c.Materialize(context.Background(), k, func(context.Context) ([]byte, error) { return nil, cause })
	if err != cause {
		t.Fatalf("Materialize: %v, want the fetcher's error unchanged", err)
	}
	if l := lb.String(); !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "kind=") {
		t.Errorf("the key is not in the debug log:\n%s", l)
	}
}

// TestFetchPanicOneLine: a panicking fetch is one error line; the stack
// goes to the log.
func TestFetchPanicOneLine(t *testing.T) {
	log, logs := testLogger(t)
	c := open(t, Options{MemBytes: 1 << 20, Logger: log})
	_, err := c.Get(context.Background(), key(1), func(context.Context) ([]byte, error) { panic("oops") })
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "panicked: oops") {
		t.Fatalf("err = %q, want one line naming the panic", err)
	}
	if !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("no stack in the log:\n%s", logs.String())
	}
}

// TestNoKeyInErrorsOrInfoLogs: a corrupt entry, an entry holding another
// key, an entry that cannot be written and one that is not kept on disk
// log and fail without the key's text at info level and above.
func TestNoKeyInErrorsOrInfoLogs(t *testing.T) {
	lb := &testkit.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir := t.TempDir()
	c := open(t, Options{MemBytes: 0, Dir: dir, DiskBytes: 1 << 20, MinFreeFraction: -1, Logger: log})
	var src source
	ctx := context.Background()

	// Corrupt: a flipped payload byte.
	a := key(1)
	mustGet(t, c, a, src.fetch(a), payload(a, 1000))
	testkit.FlipByte(t, entryPath(c, a), blockSize+10)
	mustGet(t, c, a, src.fetch(a), payload(a, 1000))

	// Another key's entry under this key's name.
	b := key(2)
	data, err := os.ReadFile(entryPath(c, a))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entryPath(c, b), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, b, src.fetch(b), payload(b, 1000))

	// A write that fails: the entry's shard directory is a file.
	w := key(3)
	shard := filepath.Dir(entryPath(c, w))
	if err := os.RemoveAll(shard); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shard, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, w, src.fetch(w), payload(w, 1000))

	// Not kept on disk: larger than the budget.
	big := key(4)
	_, err = c.Materialize(ctx, big, func(context.Context) ([]byte, error) { return make([]byte, 2<<20), nil })
	if !errors.Is(err, ErrNotStored) {
		t.Fatalf("Materialize of an entry larger than the budget: %v, want ErrNotStored", err)
	}
	if leaks := keyLeaks(err.Error(), big); len(leaks) > 0 {
		t.Errorf("error %q shows the key (%v)", err, leaks)
	}

	l := lb.String()
	for _, want := range []string{"dropping corrupt entry", "another key", "cannot write entry"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s", want, l)
		}
	}
	for _, k := range []Key{a, b, w, big} {
		if leaks := keyLeaks(l, k); len(leaks) > 0 {
			t.Errorf("info log shows key text (%v):\n%s", leaks, l)
		}
	}
}

// TestDirErrors: a cache directory that cannot be created, or takes no
// writes (a read-only filesystem), fails New with a DirError naming it,
// instead of a cache that silently stores nothing.
func TestDirErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Dir: filepath.Join(file, "cache")})
	var de *DirError
	if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), "cache directory "+filepath.Join(file, "cache", subdirName)+": ") || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("cache under a regular file: %v, want a DirError (ENOTDIR) naming the directory", err)
	}

	// A read-only filesystem, with and without the cache's directories
	// already there (root ignores permission bits: it takes a read-only
	// mount to refuse root a write).
	ro := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ro, "made", subdirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Dir: filepath.Join(ro, "made")}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(ro, ro, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount (the test needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(ro, syscall.MNT_DETACH) })
	if err := syscall.Mount("", ro, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("read-only remount: %v", err)
	}
	for _, sub := range []string{"made", "new"} {
		_, err := New(Options{Dir: filepath.Join(ro, sub)})
		if !errors.As(err, &de) || !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), filepath.Join(ro, sub, subdirName)) {
			t.Errorf("read-only %s: %v, want a DirError (EROFS) naming the directory", sub, err)
		}
	}
}
