package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// catLines runs `deltafs cat args...`, which must succeed, and parses its
// JSON lines.
func catLines(t *testing.T, args ...string) []string {
	t.Helper()
	out, errOut, code := testkit.RunMain(t, nil, append([]string{"cat"}, args...)...)
	if code != 0 {
		t.Fatalf("deltafs cat %v: exit %d: %s", args, code, errOut)
	}
	if errOut != "" {
		t.Errorf("deltafs cat %v: stderr %q", args, errOut)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON object: %q: %v", l, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// catFails runs `deltafs cat args...`, which must fail with code and one
// line on stderr containing every one of wants.
func catFails(t *testing.T, code int, args []string, wants ...string) {
	t.Helper()
	out, errOut, got := testkit.RunMain(t, nil, append([]string{"cat"}, args...)...)
	if got != code {
		t.Fatalf("deltafs cat %v: exit %d, want %d (stderr %q)", args, got, code, errOut)
	}
	if out != "" {
		t.Errorf("deltafs cat %v: stdout %q, want nothing", args, out)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "deltafs: ") {
		t.Errorf("deltafs cat %v: stderr %q, want one line", args, errOut)
	}
	for _, w := range wants {
		if !strings.Contains(errOut, w) {
			t.Errorf("deltafs cat %v: stderr %q lacks %q", args, errOut, w)
		}
	}
}

func TestCatVersions(t *testing.T) {
	table := filepath.Join(testkit.Tables(), "dat-basic_append")
	if n := len(catLines(t, table)); n != 7 {
		t.Errorf("latest: %d rows, want 7", n)
	}
	v0 := catLines(t, table, "--version", "0")
	if len(v0) != 3 {
		t.Fatalf("version 0: %d rows, want 3", len(v0))
	}
	if !strings.HasPrefix(v0[0], `{"letter":`) || !strings.Contains(v0[0], `,"number":`) || !strings.Contains(v0[0], `,"a_float":`) {
		t.Errorf("version 0: %s: want letter, number, a_float in schema order", v0[0])
	}
	if n := len(catLines(t, table, "--version", "1")); n != 5 {
		t.Errorf("version 1: %d rows, want 5", n)
	}
	// Deletion vectors: 2 of 10 rows deleted at version 1.
	dv := filepath.Join(testkit.Tables(), "deltars-table-with-dv-small")
	if n := len(catLines(t, dv, "--version", "0")); n != 10 {
		t.Errorf("dv version 0: %d rows, want 10", n)
	}
	if n := len(catLines(t, dv, "--version", "1")); n != 8 {
		t.Errorf("dv version 1: %d rows, want 8", n)
	}
}

func TestCatColumnsAndLimit(t *testing.T) {
	table := filepath.Join(testkit.Tables(), "dat-multi_partitioned")
	rows := catLines(t, table, "--columns", "number, letter")
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if !strings.HasPrefix(r, `{"number":`) || strings.Count(r, ":") != 2 || !strings.Contains(r, `,"letter":`) {
			t.Errorf("%s: want exactly number then letter", r)
		}
	}
	all := catLines(t, filepath.Join(testkit.Tables(), "golden-basic-with-inserts-deletes-checkpoint"))
	lim := catLines(t, filepath.Join(testkit.Tables(), "golden-basic-with-inserts-deletes-checkpoint"), "--limit", "3")
	if len(all) != 41 || len(lim) != 3 {
		t.Fatalf("%d rows, %d with --limit 3; want 41 and 3", len(all), len(lim))
	}
	for i := range lim {
		if lim[i] != all[i] {
			t.Errorf("--limit row %d = %s, want %s", i, lim[i], all[i])
		}
	}
	if n := len(catLines(t, table, "--limit", "0")); n != 0 {
		t.Errorf("--limit 0: %d rows", n)
	}
}

func TestCatAt(t *testing.T) {
	table := testkit.CopyTable(t, "dat-basic_append")
	times := []int64{1673493616286, 1673493625021, 1679179968857}
	for v, ms := range times {
		ts := time.UnixMilli(ms)
		p := filepath.Join(table, "_delta_log", fmt.Sprintf("%020d.json", v))
		if err := os.Chtimes(p, ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	// Between version 0 and 1: version 0 (3 rows).
	mid := time.UnixMilli(times[0] + 1000)
	if n := len(catLines(t, table, "--at", mid.UTC().Format(time.RFC3339Nano))); n != 3 {
		t.Errorf("--at %s: %d rows, want 3", mid.UTC().Format(time.RFC3339Nano), n)
	}
	if n := len(catLines(t, table, "--at", fmt.Sprint(times[1]))); n != 5 {
		t.Errorf("--at %d: %d rows, want 5 (version 1)", times[1], n)
	}
	if n := len(catLines(t, table, "--at", fmt.Sprint(times[2]+1))); n != 7 {
		t.Errorf("--at after the last commit: %d rows, want 7", n)
	}
	catFails(t, 1, []string{table, "--at", fmt.Sprint(times[0] - 1)}, "before the earliest commit")
}

func TestCatErrors(t *testing.T) {
	table := filepath.Join(testkit.Tables(), "dat-basic_append")
	catFails(t, 1, []string{table, "--columns", "number,nope"}, `no column "nope"`, "letter, number, a_float")
	catFails(t, 1, []string{table, "--version", "9"}, "version")
	catFails(t, 1, []string{filepath.Join(testkit.Tables(), "golden-deltalog-invalid-protocol-version")}, "reader version 99")
	catFails(t, 1, []string{filepath.Join(t.TempDir(), "none")})
	catFails(t, 2, []string{table, "--version", "1", "--at", "1000"}, "--version and --at")
	catFails(t, 2, []string{table, "--at", "yesterday"}, "--at")
	catFails(t, 2, []string{table, "--columns", "a,,b"}, "--columns")
	catFails(t, 2, []string{table, "--version", "-3"}, "--version")
	catFails(t, 2, []string{}, "TABLE")
	catFails(t, 2, []string{table, "--bogus"}, "bogus")
}

func TestCatVacuumedFile(t *testing.T) {
	table := testkit.CopyTable(t, "dat-basic_append")
	var victim string
	filepath.WalkDir(table, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "part-00000-9f2d7791") {
			victim = p
		}
		return nil
	})
	if victim == "" {
		t.Fatal("data file not found")
	}
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	// The whole line: "deltafs: TABLE version N: FILE: cause".
	want := "deltafs: " + table + " version 0: " + filepath.Base(victim) + ": data file missing from storage"
	catFails(t, 1, []string{table, "--version", "0"}, want)
}
