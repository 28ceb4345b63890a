package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit"
)

// TestImageFolderImportedMNIST imports the real MNIST test set with
// `deltafs import`, mounts it as PNGs in class folders over three shards, and
// checks with torchvision's ImageFolder and a two-worker DataLoader that every
// digit comes back with its label and exact pixels.
func TestImageFolderImportedMNIST(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	table := filepath.Join(t.TempDir(), "mnist")
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "2500")

	mnt := mount(t, bin, table, "--image", "28x28", "--class-column", "label", "--shards", "3")
	checkImageFolder(t, python, mnt, 3)
}

// TestImageFolderArticleTable mounts a table shaped like the source
// article's: `id` int, `label` float, `features` binary of 784 raw pixels,
// written by Spark-like code (here parquet-go) rather than by deltafs.
func TestImageFolderArticleTable(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	table := filepath.Join(t.TempDir(), "article")
	writeArticleTable(t, table, testkit.MNISTTest)

	mnt := mount(t, bin, table, "--image", "28x28", "--class-column", "label", "--data-column", "features")
	for d := 0; d < 10; d++ {
		if _, err := os.Stat(filepath.Join(mnt, "latest", "shard", "0", fmt.Sprint(d))); err != nil {
			t.Fatalf("class folder %d (float labels print as integers): %v", d, err)
		}
	}
	checkImageFolder(t, python, mnt, 1)
}

func checkImageFolder(t *testing.T, python, mnt string, shards int) {
	t.Helper()
	args := []string{"testdata/check_imagefolder.py", testkit.MNISTTest}
	for k := 0; k < shards; k++ {
		args = append(args, filepath.Join(mnt, "latest", "shard", fmt.Sprint(k)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torchvision check: %v\n%s%s", err, out, stderrOf(err))
	}
	var got struct {
		Samples  int   `json:"samples"`
		PerClass []int `json:"per_class"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("torchvision check printed %q: %v", out, err)
	}
	if got.Samples != 10000 || fmt.Sprint(got.PerClass) != fmt.Sprint(testkit.MNISTPerClass) {
		t.Fatalf("ImageFolder saw %d samples, per class %v; want 10000, %v", got.Samples, got.PerClass, testkit.MNISTPerClass)
	}
}

// articleRow is the source article's MNIST table schema.
type articleRow struct {
	ID       int32   `parquet:"id"`
	Label    float64 `parquet:"label"`
	Features []byte  `parquet:"features"`
}

// writeArticleTable writes a one-version Delta table of the MNIST records in
// src, two data files, with a hand-written commit.
func writeArticleTable(t *testing.T, dir, src string) {
	t.Helper()
	var rows []articleRow
	for _, d := range testkit.MNIST(t, src) {
		rows = append(rows, articleRow{ID: int32(d.ID), Label: float64(d.Label), Features: d.Pixels})
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	schema := `{"type":"struct","fields":[` +
		`{"name":"id","type":"integer","nullable":true,"metadata":{}},` +
		`{"name":"label","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"features","type":"binary","nullable":true,"metadata":{}}]}`
	lines := []any{
		map[string]any{"commitInfo": map[string]any{"timestamp": now, "operation": "WRITE", "engineInfo": "e2e-test"}},
		map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}},
		map[string]any{"metaData": map[string]any{"id": "3f5c1f38-4b8a-4b1e-9a51-8c1a5d1c2f10", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
			"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]any{}, "createdTime": now}},
	}
	half := len(rows) / 2
	for i, part := range [][]articleRow{rows[:half], rows[half:]} {
		name := fmt.Sprintf("part-%05d-article.snappy.parquet", i)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[articleRow](f, parquet.Compression(&parquet.Snappy))
		if _, err := w.Write(part); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		f.Close()
		lines = append(lines, map[string]any{"add": map[string]any{"path": name, "partitionValues": map[string]any{}, "size": st.Size(),
			"modificationTime": now, "dataChange": true, "stats": fmt.Sprintf(`{"numRecords":%d}`, len(part))}})
	}
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImageFolderPNM mounts the imported MNIST test set with
// --image-format pnm: Pillow opens every sample as a binary PGM (format
// PPM, mode L, 28x28), and torchvision's ImageFolder, which loads through
// Pillow, gets every digit back with its label and exact pixels.
func TestImageFolderPNM(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	table := filepath.Join(t.TempDir(), "mnist")
	run(t, bin, "import", testkit.MNISTTest, table, "--rows-per-file", "5000")
	mnt := mount(t, bin, table, "--image", "28x28", "--image-format", "pnm", "--class-column", "label")
	const script = `
import os, sys
from PIL import Image
n = 0
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.startswith("_"):  # _samples.tsv, _extents.tsv
            continue
        assert f.endswith(".pgm"), f
        with Image.open(os.path.join(d, f)) as im:
            assert (im.format, im.mode, im.size) == ("PPM", "L", (28, 28)), (f, im.format, im.mode, im.size)
            im.load()
        n += 1
print(n)
`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", script, filepath.Join(mnt, "latest", "shard", "0")).Output()
	if err != nil || strings.TrimSpace(string(out)) != "10000" {
		t.Fatalf("Pillow check: %v, %q samples opened, want 10000\n%s", err, out, stderrOf(err))
	}
	checkImageFolder(t, python, mnt, 1)
}
