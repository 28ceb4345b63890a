package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// prefixes are the things an error line names: the table, "version N",
// "data file F" and a flag, each to be said once.
var prefixes = regexp.MustCompile(`version \d+:|data file [^:]+:|--[a-z-]+ [^:]+:`)

// TestErrorLinesNameEachThingOnce runs every command that reads a table
// into its failures (unknown columns, a column asked for twice, a missing
// version, a filter over a missing column, sample flags naming a missing
// column) and checks the one error line names the table, its version and
// each flag once: the layers below used to wrap errors already carrying
// "version N:" ("TABLE version 2: version 2: no column").
func TestErrorLinesNameEachThingOnce(t *testing.T) {
	tbl := testkit.CopyTable(t, "dat-basic_append")
	mnt := mounttest.Mountpoint(t)
	cases := [][]string{
		{"cat", tbl, "--columns", "nope"},
		{"cat", tbl, "--columns", "letter,letter"},
		{"cat", tbl, "--columns", "nope", "--where", "letter = 'a'"},
		{"cat", tbl, "--where", "nope > 1"},
		{"cat", tbl, "--version", "99"},
		{"log", tbl, "--where", "nope > 1"},
		{"warm", tbl, "--version", "0", "--class-column", "nope"},
		{"warm", tbl, "--version", "0", "--id-column", "nope"},
		{"warm", tbl, "--version", "0", "--data-column", "number"},
		{"mount", tbl, mnt, "--class-column", "nope"},
		{"mount", tbl, mnt, "--data-column", "nope"},
		{"mount", tbl, mnt, "--where", "nope = 1"},
		{"mount", tbl, mnt, "--id-column", "letter", "--class-column", "nope"},
	}
	for _, args := range cases {
		_, stderr, code := testkit.RunMain(t, nil, args...)
		msg := lastLine(stderr)
		if code != 1 || !strings.HasPrefix(msg, "deltafs: ") {
			t.Fatalf("%q: exit %d, stderr %q: want status 1 and an error line", args, code, stderr)
		}
		if n := strings.Count(msg, tbl); n != 1 {
			t.Errorf("%q: %q names the table %d times, want once", args, msg, n)
		}
		seen := map[string]bool{}
		for _, p := range prefixes.FindAllString(msg, -1) {
			if seen[p] {
				t.Errorf("%q: %q says %q twice", args, msg, p)
			}
			seen[p] = true
		}
		if mounttest.Mounted(mnt) {
			mounttest.Unmount(mnt)
			t.Fatalf("%q: mounted; want a refusal before mounting", args)
		}
	}
}
