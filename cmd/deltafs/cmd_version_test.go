package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

// TestVersion: `deltafs --version` and `deltafs version` print the same
// single line: the version, then (what the build recorded and) the Go
// version and platform; a release build (-X .../internal/buildinfo.release,
// as `make build VERSION=...` stamps it) prints its release, and its
// `deltafs import` records the same release in the commit's engineInfo and
// the data files' created_by. Commands whose --version is a table version
// keep it.
func TestVersion(t *testing.T) {
	tail := regexp.QuoteMeta(runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")")
	line := regexp.MustCompile(`^deltafs (\S+) \((commit [0-9a-f]{12}(, [^;]+)?; )?` + tail + "\n$")
	a, code := runDF(t, nil, "", "--version")
	if code != 0 || !line.MatchString(a) {
		t.Fatalf("deltafs --version: exit %d, %q; want one line matching %s", code, a, line)
	}
	b, code := runDF(t, nil, "", "version")
	if code != 0 || b != a {
		t.Errorf("deltafs version: exit %d, %q; want %q", code, b, a)
	}
	out, code := runDF(t, nil, "", "version", "extra")
	wantRefusal(t, "deltafs version extra", out, code, 2, `deltafs: deltafs version: unexpected argument "extra"`)

	// The table version flag of cat is untouched.
	out, code = runDF(t, nil, "", "cat", "../../testdata/delta/dat-basic_append", "--version", "0", "--limit", "1")
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Errorf("deltafs cat --version 0: exit %d\n%s", code, out)
	}

	// A release build says its release.
	bin := filepath.Join(t.TempDir(), "deltafs")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/deltafs/deltafs/internal/buildinfo.release=v9.8.7-test", "-o", bin, "./cmd/deltafs")
	build.Dir = testkit.ModuleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	got, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !line.Match(got) || !strings.HasPrefix(string(got), "deltafs v9.8.7-test (") {
		t.Errorf("release build: %q %v, want deltafs v9.8.7-test (...)", got, err)
	}

	table := filepath.Join(t.TempDir(), "t")
	if out, err := exec.Command(bin, "import", filepath.Join(testkit.ModuleRoot(), "testdata", "mnist", "demo", "demo-2-append.npy.gz"), table).CombinedOutput(); err != nil {
		t.Fatalf("release build's import: %v\n%s", err, out)
	}
	commit, err := os.ReadFile(filepath.Join(table, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(commit), `"engineInfo":"deltafs/v9.8.7-test"`) {
		t.Errorf("release build's import commit does not record engineInfo deltafs/v9.8.7-test:\n%s", commit)
	}
	files, _ := filepath.Glob(filepath.Join(table, "*.parquet"))
	if len(files) == 0 {
		t.Fatalf("release build's import wrote no data file in %s", table)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(data), "deltafs version v9.8.7-test") {
		t.Errorf("release build's data file %s: created_by does not name v9.8.7-test (%v)", files[0], err)
	}
}
