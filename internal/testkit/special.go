package testkit

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Bounded runs fn and fails the test when it has not returned within
// limit: a read that blocks on a named pipe blocks for good, and a test
// must say so rather than hang. (fn keeps running in its goroutine.)
func Bounded(t testing.TB, what string, limit time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s still blocked after %v", what, limit)
	}
}

// Socket is the path of a listening Unix socket, in a directory of its own
// with a short path (a socket's path is limited to 108 bytes, which
// t.TempDir() can exceed), for a test to rename or link into a table or
// a source. The socket is closed and its directory removed in t.Cleanup.
func Socket(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return p
}
