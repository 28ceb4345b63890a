package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

type logExpected struct {
	Versions map[string]struct {
		Rows            *int64  `json:"rows"`
		Files           int     `json:"files"`
		CommitTimestamp *int64  `json:"commitInfo_timestamp"`
		Operation       *string `json:"operation"`
		// InCommitTimestamp is set where the table enables them.
		InCommitTimestamp *int64 `json:"inCommitTimestamp"`
	} `json:"versions"`
	Unreconstructable []int64 `json:"unreconstructable_versions"`
}

func loadLogExpected(t *testing.T) map[string]logExpected {
	t.Helper()
	var out map[string]logExpected
	testkit.Expected(t, &out)
	return out
}

// copyWithCommitTimes copies a table and sets each commit file's
// modification time to its commitInfo.timestamp (git keeps no mtimes).
func copyWithCommitTimes(t *testing.T, name string, e logExpected) string {
	t.Helper()
	dst := testkit.CopyTable(t, name)
	for k, v := range e.Versions {
		n, _ := strconv.Atoi(k)
		ts := time.UnixMilli(*v.CommitTimestamp)
		if err := os.Chtimes(filepath.Join(dst, "_delta_log", fmt.Sprintf("%020d.json", n)), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// `deltafs log --json` prints every readable version of every table with
// EXPECTED's files, rows, operation and (file-time) timestamp. Rows are
// exact also where the log has no statistics (deltars-simple_table,
// deltars-delta-0.8-empty): those files are counted from their footers.
func TestLogJSONMatchesExpected(t *testing.T) {
	exp := loadLogExpected(t)
	refused := map[string]bool{
		"golden-deltalog-invalid-protocol-version": true, "deltars-simple_table_features": true,
		"deltars-spark-variant-checkpoint": true,
	}
	tables := 0
	for name, e := range exp {
		if refused[name] {
			continue
		}
		tables++
		t.Run(name, func(t *testing.T) {
			dir := copyWithCommitTimes(t, name, e)
			var out bytes.Buffer
			if err := runLog(context.Background(), &out, dir, logOptions{JSON: true}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != len(e.Versions)-len(e.Unreconstructable) {
				t.Fatalf("%d lines, want %d readable versions", len(lines), len(e.Versions)-len(e.Unreconstructable))
			}
			for i, l := range lines {
				var got map[string]any
				if err := json.Unmarshal([]byte(l), &got); err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				if len(got) != 5 {
					t.Errorf("line %d has keys %v, want version, timestamp, operation, files, rows", i, got)
				}
				v, _ := got["version"].(float64)
				ev, ok := e.Versions[strconv.Itoa(int(v))]
				if !ok {
					t.Fatalf("line %d: version %v not in EXPECTED", i, got["version"])
				}
				if got["files"] != float64(ev.Files) || got["rows"] != float64(*ev.Rows) {
					t.Errorf("line %d: %s; want files %d, rows %d", i, l, ev.Files, *ev.Rows)
				}
				if ev.Operation != nil && got["operation"] != *ev.Operation {
					t.Errorf("line %d: %s; want operation %s", i, l, *ev.Operation)
				}
				if ev.InCommitTimestamp == nil && ev.CommitTimestamp != nil && got["timestamp"] != float64(*ev.CommitTimestamp) {
					t.Errorf("line %d: %s; want file time %d", i, l, *ev.CommitTimestamp)
				}
				if ev.InCommitTimestamp != nil && got["timestamp"] != float64(*ev.InCommitTimestamp) {
					t.Errorf("line %d: %s; want in-commit timestamp %d", i, l, *ev.InCommitTimestamp)
				}
			}
		})
	}
	if tables != 25 {
		t.Errorf("%d readable tables in EXPECTED.json, want 25", tables)
	}
}

func TestLogTable(t *testing.T) {
	dir := copyWithCommitTimes(t, "dat-basic_append", loadLogExpected(t)["dat-basic_append"])
	stdout, stderr, code := testkit.RunMain(t, nil, "log", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := []string{
		"VERSION COMMITTED (UTC) OPERATION FILES ROWS",
		"0 2023-01-12 03:20:16.286 WRITE 1 3",
		"1 2023-01-12 03:20:25.021 WRITE 2 5",
		"2 2023-03-18 22:52:48.857 delta-rs.Write 3 7",
	}
	if got := strings.Split(strings.TrimSpace(squashLog(stdout)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Refused tables, a missing table and bad usage: one line on stderr in
// the form "deltafs: TABLE version N: FILE: cause", and the exit status.
func TestLogErrors(t *testing.T) {
	abs := func(name string) string {
		p, _ := filepath.Abs(filepath.Join(testkit.Tables(), name))
		return p
	}
	missing := filepath.Join(t.TempDir(), "nowhere")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"log", abs("golden-deltalog-invalid-protocol-version")}, 1,
			"deltafs: " + abs("golden-deltalog-invalid-protocol-version") + " version 0: _delta_log/00000000000000000000.json: unsupported table protocol: reader version 99 is not supported (deltafs reads versions 1 to 3)\n"},
		{[]string{"log", "--json", abs("deltars-simple_table_features")}, 1,
			"deltafs: " + abs("deltars-simple_table_features") + " version 4: _delta_log/00000000000000000000.json: unsupported table protocol: reader version 5 is not supported (deltafs reads versions 1 to 3); reader feature \"blahabl\" is not supported\n"},
		{[]string{"log", abs("deltars-spark-variant-checkpoint")}, 1,
			"deltafs: " + abs("deltars-spark-variant-checkpoint") + " version 2: _delta_log/00000000000000000002.checkpoint.parquet: unsupported table protocol: reader feature \"variantType-preview\" is not supported\n"},
		{[]string{"log", missing}, 1,
			"deltafs: " + missing + ": _delta_log/: not a Delta table: no commit or checkpoint files\n"},
		{[]string{"log"}, 2, "deltafs: log: want TABLE, got 0 arguments\n"},
		{[]string{"log", "a", "b"}, 2, "deltafs: log: want TABLE, got 2 arguments\n"},
	}
	for _, c := range cases {
		stdout, stderr, code := testkit.RunMain(t, nil, c.args...)
		if code != c.code || stderr != c.want || stdout != "" {
			t.Errorf("deltafs %v: exit %d, stdout %q, stderr\n%q\nwant exit %d, stderr\n%q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}
}

// A corrupt commit: the versions before it are printed, then the error
// names the version and the file.
func TestLogStopsAtCorruptCommit(t *testing.T) {
	const name = "golden-basic-with-inserts-deletes-checkpoint"
	dir := copyWithCommitTimes(t, name, loadLogExpected(t)[name])
	p := filepath.Join(dir, "_delta_log", "00000000000000000012.json")
	if err := os.WriteFile(p, []byte("{\"add\":{\"path\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := testkit.RunMain(t, nil, "log", "--json", dir)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(stdout, "\n"); n != 12 {
		t.Errorf("%d versions printed before the error, want 12", n)
	}
	want := "deltafs: " + dir + " version 12: _delta_log/00000000000000000012.json: line 1: unexpected end of JSON input\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// squashLog collapses runs of blanks in each line, so checks do not
// depend on column widths.
func squashLog(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
