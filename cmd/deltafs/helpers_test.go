package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// lastLine is the last non-empty line of s (the error line of a failed
// command, the latest line of a log).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// requireErrorLine checks the output of a command that must fail: exit
// status 1; on stderr one error line, the last, naming loc once as
// "deltafs: LOC: ..." and saying every want (lower case); before it only
// log lines, at most maxInfo of them at info level (maxInfo < 0: any log
// lines, at any level). It returns the error line.
func requireErrorLine(t *testing.T, stderr string, code int, loc string, maxInfo int, want []string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msg := lines[len(lines)-1]
	if code != 1 || !strings.HasPrefix(msg, "deltafs: "+loc+": ") || strings.Count(msg, loc) != 1 {
		t.Fatalf("exit %d, stderr %q: want status 1 and one line naming %s once", code, stderr, loc)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "time=") || maxInfo >= 0 && (!strings.Contains(l, "level=INFO") || len(lines)-1 > maxInfo) {
			t.Fatalf("stderr %q: want the error line after log lines only (at most %d at info level)", stderr, maxInfo)
		}
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(msg), w) {
			t.Fatalf("%q does not say %q", msg, w)
		}
	}
	return msg
}

// mirrorTables uploads the testdata tables names to a cloud, each under
// its name (upload returns how many objects it sent), and returns a local
// copy of each whose files carry the modification time of their object
// (log timestamps are file times, and git keeps none). times lists every
// uploaded object's key (name/…) and modification time.
func mirrorTables(t *testing.T, names []string, upload func(name, src string) int, times func() map[string]time.Time) map[string]string {
	t.Helper()
	local := map[string]string{}
	root := t.TempDir()
	for _, name := range names {
		src := filepath.Join(testkit.Tables(), name)
		if upload(name, src) == 0 {
			t.Fatalf("%s: nothing uploaded", name)
		}
		dst := filepath.Join(root, name)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		local[name] = dst
	}
	listed := times()
	if len(listed) == 0 {
		t.Fatal("no object listed")
	}
	for key, mt := range listed {
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(key)), mt, mt); err != nil {
			t.Fatalf("object %s has no local copy: %v", key, err)
		}
	}
	return local
}
