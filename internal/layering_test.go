// Package internal_test checks deltafs's layering: no package imports one
// that stands above it. From the bottom: the shared helpers and extents
// (which import nothing of deltafs's layers), storage, the Delta log and its
// rows (snapshot, scan, filter, and writer and importer, which write it),
// the catalogs, page (reading a page of a column of a data file), sample,
// cache, table, fs, and the commands at the top. A
// test fake is a package like any other (storage/s3store/s3test stands with
// storage), so its imports are checked too; test files are not: a test may
// reach up (table's tests mount through fs).
package internal_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

const module = "github.com/deltafs/deltafs"

// layers lists deltafs's layers from the bottom, each by the package paths
// (relative to the module) that stand in it: a path names that package and
// every package under it; the longest path that matches a package decides.
var layers = []struct {
	name  string
	paths []string
}{
	{"helpers", []string{"internal", "extents"}},
	{"storage", []string{"storage"}},
	{"log", []string{"snapshot", "scan", "filter", "writer", "importer"}},
	// A Delta Sharing server answers in the log's actions and is told the
	// reader features snapshot supports: it stands with the catalogs, above
	// the log, though it serves a table as a store.
	{"catalogs", []string{"catalog", "storage/sharing"}},
	// The page reader: below sample, which reads its values through it.
	// Package cache imports neither (cache.KeyIn takes a page.Key by its
	// fields), for page's and sample's tests use the cache.
	{"page", []string{"page"}},
	{"sample", []string{"sample"}},
	// gds reads the disk cache's files where their extents say.
	{"cache", []string{"cache", "gds"}},
	{"table", []string{"table"}},
	{"fusefs", []string{"fusefs"}},
	{"commands", []string{"cmd", "csi", "bench", "e2e", "examples", "deploy"}},
}

// layerOf returns the rank of the layer rel (a package path relative to
// the module) stands in and its name, or -1 when no layer lists it.
func layerOf(rel string) (int, string) {
	rank, name, best := -1, "", -1
	for i, l := range layers {
		for _, p := range l.paths {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > best {
				rank, name, best = i, l.name, len(p)
			}
		}
	}
	return rank, name
}

// violations returns one line per import in graph (package -> its
// imports, module-relative) that runs back up the layering, and one per
// package no layer lists.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		from, fromName := layerOf(pkg)
		if from < 0 {
			out = append(out, fmt.Sprintf("%s stands in no layer: add it to layers in internal/layering_test.go", pkg))
			continue
		}
		for _, imp := range imports {
			to, toName := layerOf(imp)
			if to > from {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s), which stands above it", pkg, fromName, imp, toName))
			}
		}
	}
	sort.Strings(out)
	return out
}

// moduleGraph lists the module's packages with their imports of the
// module's packages (not their tests'), module-relative.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = testkit.ModuleRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v: %s", err, stderr.Bytes())
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg, ok := rel(fields[0])
		if !ok {
			t.Fatalf("go list: %s is not in module %s", fields[0], module)
		}
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if r, ok := rel(imp); ok {
				graph[pkg] = append(graph[pkg], r)
			}
		}
	}
	if len(graph) < 20 {
		t.Fatalf("go list found %d packages in the module: %v", len(graph), graph)
	}
	return graph
}

// TestLayering fails when a package of the module imports one that stands
// above it, or stands in no layer.
func TestLayering(t *testing.T) {
	for _, v := range violations(moduleGraph(t)) {
		t.Error(v)
	}
}

// TestLayeringCatches checks the check on a made-up graph: the imports that
// ran back up before the fakes moved beside what they fake.
func TestLayeringCatches(t *testing.T) {
	graph := map[string][]string{
		"storage":             {"internal/lru"},
		"snapshot":            {"storage", "internal/flight"},
		"extents/materialize": {"cache", "extents", "sample"},
		"internal/mounttest":  {"fusefs", "internal/testkit"},
		"cache/materialize":   {"cache", "sample"},
		"storage/sharing":     {"snapshot"},
		"sample/sampletest":   {"sample", "snapshot"},
		"page":                {"storage", "internal/pqcheck", "sample"},
		"newthing":            nil,
	}
	got := strings.Join(violations(graph), "\n")
	for _, want := range []string{
		"extents/materialize (helpers) imports cache (cache), which stands above it",
		"extents/materialize (helpers) imports sample (sample), which stands above it",
		"internal/mounttest (helpers) imports fusefs (fusefs), which stands above it",
		"page (page) imports sample (sample), which stands above it",
		"newthing stands in no layer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations miss %q; got:\n%s", want, got)
		}
	}
	if n := len(violations(graph)); n != 5 {
		t.Errorf("%d violations, want 5:\n%s", n, got)
	}
}
