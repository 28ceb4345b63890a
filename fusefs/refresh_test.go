package fusefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// How latest moves in a running mount of the real binary, polling every
// 200ms: only to a version that can be read, with one warning for a
// version it does not move to, and on as soon as the log is readable
// again.

// refreshWriteCommit writes _delta_log/<v>.json of table.
func refreshWriteCommit(t *testing.T, table string, v int, content string) {
	t.Helper()
	name := filepath.Join(table, "_delta_log", strings.Repeat("0", 20-len(strconv.Itoa(v)))+strconv.Itoa(v)+".json")
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const refreshEmptyCommit = `{"commitInfo":{"timestamp":1700000000000,"operation":"TEST"}}` + "\n"

// refreshLatestIs waits up to bound for MOUNT/latest to read want.
func refreshLatestIs(t *testing.T, m *mounttest.Mount, want string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	got := ""
	for time.Now().Before(deadline) {
		got, _ = os.Readlink(filepath.Join(m.Dir, "latest"))
		if got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("latest -> %q after %v, want %q", got, bound, want)
}

// refreshListed waits up to bound for version/<name> to be listed.
func refreshListed(t *testing.T, m *mounttest.Mount, name string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(filepath.Join(m.Dir, "version"))
		for _, e := range entries {
			if e.Name() == name {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("version/%s not listed after %v", name, bound)
}

// refreshStays checks that latest reads want for a while (many polls).
func refreshStays(t *testing.T, m *mounttest.Mount, want string) {
	t.Helper()
	for range 10 {
		if got, _ := os.Readlink(filepath.Join(m.Dir, "latest")); got != want {
			t.Fatalf("latest -> %q, want it to stay %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// refreshSkipWarning is the one log line for a version latest does not move to.
func refreshSkipWarning(table string, v int, cause string) string {
	return `level=WARN msg="latest does not move to a version that cannot be read" table=` + table +
		" version=" + strconv.Itoa(v) + ` cause="` + strings.ReplaceAll(cause, `"`, `\"`) + `"`
}

// refreshEIO checks that reading version/<v>/_commit.json fails with EIO.
func refreshEIO(t *testing.T, m *mounttest.Mount, v int) {
	t.Helper()
	_, err := os.ReadFile(filepath.Join(m.Dir, "version", strconv.Itoa(v), "_commit.json"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("version/%d/_commit.json: %v, want EIO", v, err)
	}
}

// A commit newer than a missing one (a writer's commit not visible yet):
// latest stays, the newer version is listed and fails with EIO, and once
// the missing commit appears latest moves on, and keeps moving.
func TestMountLatestWaitsForMissingCommit(t *testing.T) {
	bin := mounttest.Binary(t)
	table := testkit.CopyTable(t, "dat-basic_append")
	m := mounttest.Start(t, bin, table, "--refresh", "200ms", "--cache-dir", "none")
	refreshLatestIs(t, m, "version/2", 5*time.Second)

	refreshWriteCommit(t, table, 4, refreshEmptyCommit)
	refreshListed(t, m, "4", 10*time.Second)
	refreshStays(t, m, "version/2")
	refreshEIO(t, m, 4)
	warn := refreshSkipWarning(table, 4, "_delta_log/00000000000000000003.json: missing commit file: the log jumps from version 2 to 4")
	if n := strings.Count(m.Log(), warn); n != 1 {
		t.Fatalf("%d warnings %q, want 1; log:\n%s", n, warn, m.Log())
	}

	start := time.Now()
	refreshWriteCommit(t, table, 3, refreshEmptyCommit)
	refreshLatestIs(t, m, "version/4", 10*time.Second)
	t.Logf("latest moved %v after the missing commit appeared", time.Since(start))
	refreshWriteCommit(t, table, 5, refreshEmptyCommit)
	refreshLatestIs(t, m, "version/5", 10*time.Second)
	if _, err := os.ReadFile(filepath.Join(m.Dir, "version", "4", "_commit.json")); err != nil {
		t.Fatalf("version/4 once the gap filled: %v", err)
	}
	if n := strings.Count(m.Log(), `msg="latest does not move`); n != 1 {
		t.Errorf("%d skip warnings in all, want 1; log:\n%s", n, m.Log())
	}
}

// A truncated commit, then an unknown reader feature: latest stays at the
// last readable version (a fresh mount refuses), with one warning each,
// and moves once the commit is complete, then once a later commit
// changes the protocol back.
func TestMountLatestSkipsUnreadableCommits(t *testing.T) {
	bin := mounttest.Binary(t)
	table := testkit.CopyTable(t, "dat-basic_append")
	m := mounttest.Start(t, bin, table, "--refresh", "200ms", "--cache-dir", "none")
	refreshLatestIs(t, m, "version/2", 5*time.Second)

	refreshWriteCommit(t, table, 3, refreshEmptyCommit[:20])
	refreshListed(t, m, "3", 10*time.Second)
	refreshStays(t, m, "version/2")
	refreshEIO(t, m, 3)
	truncated := refreshSkipWarning(table, 3, "_delta_log/00000000000000000003.json: line 1: unexpected end of JSON input")
	if n := strings.Count(m.Log(), truncated); n != 1 {
		t.Fatalf("%d warnings %q, want 1; log:\n%s", n, truncated, m.Log())
	}
	// A fresh mount refuses the table while its latest commit is broken.
	if fresh, err := mounttest.StartAt(bin, table, t.TempDir(), "--cache-dir", "none"); err == nil {
		fresh.Stop()
		t.Fatal("a fresh mount accepted a table whose latest commit is truncated")
	} else if !strings.Contains(err.Error(), "version 3: _delta_log/00000000000000000003.json: line 1: unexpected end of JSON input") {
		t.Fatalf("fresh mount: %v", err)
	}

	refreshWriteCommit(t, table, 3, refreshEmptyCommit) // the writer completes it
	refreshLatestIs(t, m, "version/3", 10*time.Second)

	refreshWriteCommit(t, table, 4, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["zzz"],"writerFeatures":["zzz"]}}`+"\n")
	refreshListed(t, m, "4", 10*time.Second)
	refreshStays(t, m, "version/3")
	refreshEIO(t, m, 4)
	refused := refreshSkipWarning(table, 4, `_delta_log/00000000000000000004.json: unsupported table protocol: reader feature "zzz" is not supported`)
	if n := strings.Count(m.Log(), refused); n != 1 {
		t.Fatalf("%d warnings %q, want 1; log:\n%s", n, refused, m.Log())
	}

	refreshWriteCommit(t, table, 5, `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`+"\n")
	refreshLatestIs(t, m, "version/5", 10*time.Second)
	refreshEIO(t, m, 4)
	if n := strings.Count(m.Log(), `msg="latest does not move`); n != 2 {
		t.Errorf("%d skip warnings in all, want 2; log:\n%s", n, m.Log())
	}
}
