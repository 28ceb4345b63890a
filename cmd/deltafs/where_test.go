package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// filterable are the Delta types --where compares.
func filterable(typ string) bool {
	switch typ {
	case "long", "integer", "short", "byte", "float", "double", "string", "binary", "boolean", "date", "timestamp", "timestamp_ntz":
		return true
	}
	return strings.HasPrefix(typ, "decimal(")
}

// TestWhereMatchesPython: on every shared test table whose latest version
// reads, `deltafs cat --where` gives exactly the rows of `deltafs cat`
// that an independent evaluator (testdata/wherecheck.py, Python's own
// comparisons and three-valued logic) keeps, for predicates of every
// operator on every column of a filterable type.
func TestWhereMatchesPython(t *testing.T) {
	bin := mounttest.Binary(t)
	tables := testkit.DirNames(t, testkit.Tables())
	checked, preds := 0, 0
	re := regexp.MustCompile(`checked (\d+) predicates`)
	for _, name := range tables {
		dir := filepath.Join(testkit.Tables(), name)
		if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := snapshot.Open(ctx, st)
		var snap *snapshot.Snapshot
		if err == nil {
			var vs []snapshot.VersionInfo
			if vs, err = tbl.Versions(ctx); err == nil && len(vs) > 0 {
				snap, err = tbl.Snapshot(ctx, vs[len(vs)-1].Version)
			}
		}
		cancel()
		if err != nil || snap == nil || snap.Schema == nil {
			t.Logf("%s: not checked (its latest version does not read: %v)", name, err)
			continue
		}
		types := map[string]string{}
		for _, f := range snap.Schema.Fields {
			if p, ok := f.Type.(*snapshot.PrimitiveType); ok && filterable(p.Name) {
				types[f.Name] = p.Name
			}
		}
		if len(types) == 0 {
			continue
		}
		tf := filepath.Join(t.TempDir(), "types.json")
		b, _ := json.Marshal(types)
		if err := os.WriteFile(tf, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
		out, err := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/wherecheck.py", bin, dir, tf).CombinedOutput()
		cancel()
		if strings.Contains(string(out), "latest version") || strings.Contains(string(out), "exit 1: deltafs") && !strings.Contains(string(out), "MISMATCH") && err != nil {
			t.Logf("%s: not checked: %s", name, strings.TrimSpace(string(out)))
			continue
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		m := re.FindStringSubmatch(string(out))
		if m == nil {
			t.Errorf("%s: %s", name, out)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		checked++
		preds += n
	}
	t.Logf("%d tables, %d predicates checked", checked, preds)
	if checked < 20 || preds < 500 {
		t.Errorf("only %d tables and %d predicates checked", checked, preds)
	}
}

// TestMountWhere: a mount with --where serves only the matching rows, in
// class folders balanced across shards; its start line and _commit.json
// say the filter and what it made of the files; `deltafs log --where`
// counts the same rows; a bad filter fails the mount with one line.
func TestMountWhere(t *testing.T) {
	bin := mounttest.Binary(t)
	dir := t.TempDir()
	if err := testkit.WritePartitioned(dir, testkit.Partitioned{Partitions: 10, FilesPer: 2, RowsPer: 100, SampleBytes: 64, Only: -1}); err != nil {
		t.Fatal(err)
	}
	where := "split IN ('p3', 'p4') AND label IN (3, 7)"
	m := mounttest.Start(t, bin, dir, "--where", where, "--class-column", "label", "--shards", "2", "--cache-dir", "none")
	if !strings.Contains(m.Log(), `where=\"split IN ('p3', 'p4') AND label IN (3, 7)\" files_pruned=16 files_skipped=0 files_read=4`) {
		t.Errorf("the start line does not say the filter:\n%s", m.Log())
	}
	commit, err := os.ReadFile(filepath.Join(m.Dir, "latest", "_commit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Filter map[string]any `json:"filter"`
	}
	if err := json.Unmarshal(commit, &c); err != nil || c.Filter["where"] != where || c.Filter["filesPruned"] != 16.0 || c.Filter["filesRead"] != 4.0 {
		t.Errorf("_commit.json: %v %s", err, commit)
	}
	total := 0
	for k := range 2 {
		shard := filepath.Join(m.Dir, "latest", "shard", strconv.Itoa(k))
		classes := testkit.DirNames(t, shard)
		if strings.Join(classes, ",") != "3,7,_samples.tsv" {
			t.Errorf("shard %d holds %v", k, classes)
		}
		tsv, err := os.ReadFile(filepath.Join(shard, "_samples.tsv"))
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(tsv), "\n")
		total += n
		if n != 80/2 {
			t.Errorf("shard %d: %d samples, want 40", k, n)
		}
		for _, cl := range []string{"3", "7"} {
			for _, name := range testkit.DirNames(t, filepath.Join(shard, cl)) {
				id, err := strconv.Atoi(strings.TrimSuffix(name, ".bin"))
				// p3 and p4 hold ids 600..999.
				if err != nil || id < 600 || id >= 1000 || strconv.Itoa(id%10) != cl {
					t.Errorf("shard %d class %s: sample %s", k, cl, name)
				}
			}
		}
	}
	if total != 80 {
		t.Errorf("%d samples, want 80", total)
	}
	out, err := mounttest.Run(bin, "log", dir, "--where", where, "--json")
	if err != nil || !strings.Contains(out, `"files":4,"rows":80`) {
		t.Errorf("log --where: %v %s", err, out)
	}
	out, err = mounttest.Run(bin, "mount", dir, t.TempDir(), "--where", "label = 'x'", "--cache-dir", "none")
	if err == nil || !strings.Contains(out, "--where: column label is integer; 'x' at offset 8 is not a number") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("a filter that does not fit the schema: %v %q", err, out)
	}
	out, err = mounttest.Run(bin, "warm", dir, "--version", "0", "--where", "split = 'p3'", "--cache-dir", t.TempDir())
	if err != nil {
		t.Errorf("warm --where: %v %s", err, out)
	}
}
