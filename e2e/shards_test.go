package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// writeTree writes an ImageFolder tree root/<class>/<i>.png of small real
// PNGs, perClass images per class.
func writeTree(t *testing.T, root string, classes []string, perClass int) {
	t.Helper()
	for ci, c := range classes {
		if err := os.MkdirAll(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perClass; i++ {
			img := image.NewGray(image.Rect(0, 0, 6, 5))
			for p := range img.Pix {
				img.Pix[p] = byte(ci*40 + i + p)
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, c, fmt.Sprintf("%03d.png", i)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// torchvisionClasses loads each root with torchvision's ImageFolder and
// returns its class_to_idx, checking in Python that every sample's target
// names the class folder it was listed from.
func torchvisionClasses(t *testing.T, python string, roots []string) []map[string]int {
	t.Helper()
	const script = `
import json, os, sys
from torchvision import datasets
out = []
for root in sys.argv[1:]:
    ds = datasets.ImageFolder(root)
    for path, target in ds.samples:
        label = os.path.basename(os.path.dirname(path))
        assert ds.classes[int(target)] == label, (path, target, ds.classes)
    out.append(ds.class_to_idx)
print(json.dumps(out))
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, append([]string{"-c", script}, roots...)...).Output()
	if err != nil {
		t.Fatalf("torchvision: %v\n%s%s", err, out, stderrOf(err))
	}
	var got []map[string]int
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("torchvision printed %q: %v", out, err)
	}
	return got
}

// TestShardsHoldEveryClass imports an ImageFolder tree (four classes) with
// `deltafs import`, mounts it with --shards 3 --class-column label, and
// checks that every shard has the same class folders, so that torchvision's
// per-rank class_to_idx agrees — the importer writes the rows shuffled, not
// class by class. A table written class by class (two appends of one class
// each) gets a warning in the mount log instead.
func TestShardsHoldEveryClass(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	dir := t.TempDir()
	classes := []string{"ant", "bee", "cat", "dog"}
	writeTree(t, filepath.Join(dir, "src"), classes, 30)
	table := filepath.Join(dir, "table")
	run(t, bin, "import", filepath.Join(dir, "src"), table, "--rows-per-file", "25")

	m := mounttest.Start(t, bin, table, "--shards", "3", "--class-column", "label")
	var roots []string
	total := 0
	for k := 0; k < 3; k++ {
		root := filepath.Join(m.Dir, "latest", "shard", fmt.Sprint(k))
		roots = append(roots, root)
		ents, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			if e.IsDir() {
				got = append(got, e.Name())
				files, err := os.ReadDir(filepath.Join(root, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				total += len(files)
			}
		}
		if strings.Join(got, ",") != strings.Join(classes, ",") {
			t.Errorf("shard %d class folders %v, want %v", k, got, classes)
		}
	}
	if total != 120 {
		t.Errorf("%d samples in the class folders of the shards, want 120", total)
	}
	want := map[string]int{"ant": 0, "bee": 1, "cat": 2, "dog": 3}
	for k, c2i := range torchvisionClasses(t, python, roots) {
		if fmt.Sprint(c2i) != fmt.Sprint(want) {
			t.Errorf("shard %d: torchvision class_to_idx %v, want %v", k, c2i, want)
		}
	}
	if strings.Contains(m.Log(), "shards hold different classes") {
		t.Errorf("warned about class sets on a shuffled import:\n%s", m.Log())
	}

	// Clustered: one class per commit, one file each. The balanced layout
	// (the default with a class column) deals each class across both
	// shards anyway, so torchvision numbers the classes alike on both
	// ranks; the contiguous layout gives each shard one class, and the
	// mount says so.
	clustered := filepath.Join(dir, "clustered")
	writeTree(t, filepath.Join(dir, "src-a"), classes[:1], 10)
	writeTree(t, filepath.Join(dir, "src-b"), classes[1:2], 10)
	run(t, bin, "import", filepath.Join(dir, "src-a"), clustered)
	run(t, bin, "import", filepath.Join(dir, "src-b"), clustered)
	mb := mounttest.Start(t, bin, clustered, "--shards", "2", "--class-column", "label")
	var croots []string
	for k := 0; k < 2; k++ {
		croots = append(croots, filepath.Join(mb.Dir, "version", "1", "shard", fmt.Sprint(k)))
	}
	for k, c2i := range torchvisionClasses(t, python, croots) {
		if fmt.Sprint(c2i) != fmt.Sprint(map[string]int{"ant": 0, "bee": 1}) {
			t.Errorf("clustered table, balanced layout, shard %d: class_to_idx %v", k, c2i)
		}
	}
	mc := mounttest.Start(t, bin, clustered, "--shards", "2", "--class-column", "label", "--shard-layout", "contiguous")
	for k := 0; k < 2; k++ {
		if _, err := os.ReadDir(filepath.Join(mc.Dir, "latest", "shard", fmt.Sprint(k))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(mc.Log(), "shards hold different classes") {
		if time.Now().After(deadline) {
			t.Fatalf("no class set warning for a clustered table under the contiguous layout; log:\n%s", mc.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
