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

	"github.com/deltafs/deltafs/internal/mounttest"
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
