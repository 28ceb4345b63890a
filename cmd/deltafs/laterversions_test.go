package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

// A problem in a later version (a protocol this reader refuses, a missing
// commit) leaves the older versions readable by `deltafs cat --version`;
// reading the latest, or `deltafs log` past the problem, fails with one
// line naming the version asked for and the file at fault, no prefix
// repeated.
func TestCatOlderVersionsDespiteLaterProblems(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(table string)
		latest  string // stderr of `cat TABLE`
		logWant string // stderr of `log TABLE`
	}{
		{
			name: "protocol upgrade",
			damage: func(table string) {
				writeLaterLog(t, table, "00000000000000000003.json", `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["zzz"],"writerFeatures":["zzz"]}}`)
			},
			latest:  ` version 3: _delta_log/00000000000000000003.json: unsupported table protocol: reader feature "zzz" is not supported`,
			logWant: ` version 3: _delta_log/00000000000000000003.json: unsupported table protocol: reader feature "zzz" is not supported`,
		},
		{
			name: "missing commit",
			damage: func(table string) {
				writeLaterLog(t, table, "00000000000000000004.json", `{"commitInfo":{"timestamp":1700000000000}}`)
			},
			latest:  ` version 4: _delta_log/00000000000000000003.json: missing commit file: the log jumps from version 2 to 4`,
			logWant: ` version 4: _delta_log/00000000000000000003.json: missing commit file: the log jumps from version 2 to 4`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := copyWithCommitTimes(t, "dat-basic_append", loadLogExpected(t)["dat-basic_append"])
			c.damage(table)
			if n := len(catLines(t, table, "--version", "1")); n != 5 {
				t.Errorf("version 1: %d rows, want 5", n)
			}
			if n := len(catLines(t, table, "--version", "2")); n != 7 {
				t.Errorf("version 2: %d rows, want 7", n)
			}
			catFails(t, 1, []string{table}, "deltafs: "+table+c.latest+"\n")
			stdout, stderr, code := testkit.RunMain(t, nil, "log", "--json", table)
			if code != 1 || stderr != "deltafs: "+table+c.logWant+"\n" {
				t.Errorf("log: exit %d, stderr %q; want %q", code, stderr, "deltafs: "+table+c.logWant+"\n")
			}
			if n := strings.Count(stdout, "\n"); n != 3 {
				t.Errorf("log printed %d versions before the error, want 3", n)
			}
		})
	}
}

// A version that does not exist: one line, the version named once.
func TestCatVersionNotFoundMessage(t *testing.T) {
	table, _ := filepath.Abs(filepath.Join(testkit.Tables(), "dat-basic_append"))
	catFails(t, 1, []string{table, "--version", "7"}, "deltafs: "+table+" version 7: does not exist (the latest version is 2)\n")
	_, errOut, _ := testkit.RunMain(t, nil, "cat", table, "--version", "7")
	if strings.Count(errOut, "version 7") != 1 {
		t.Errorf("stderr %q repeats the version", errOut)
	}
	catFails(t, 2, []string{table, "--at", "yesterday"}, `deltafs: --at: "yesterday" is not a time: want Unix milliseconds`)
}

func writeLaterLog(t *testing.T, table, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(table, "_delta_log", name), []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
