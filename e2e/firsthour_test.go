package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/sample"
)

// TestFirstHourImageFolder is the README's "Your own ImageFolder tree",
// command for command: `deltafs import TREE TABLE`, then `deltafs mount
// TABLE MNT --class-column label --id-column path`, then torchvision's
// ImageFolder over MNT/latest/shard/0 (Debian's /usr/bin/python3). Every
// image of the tree comes back, decoded, in its own class, with its exact
// bytes, under a name that is its original path (class folder and file
// name) escaped, as the README shows: cat/img_001.png as
// cat/cat%2Fimg_001.png.png.
func TestFirstHourImageFolder(t *testing.T) {
	python := needTorchvision(t)
	bin := buildDeltafs(t)
	tree := filepath.Join(t.TempDir(), "tree")
	want := map[string]string{} // original path -> sha256 of its bytes
	write := func(rel string, enc func(*bytes.Buffer, image.Image) error, w, h int, c color.Color) {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				img.Set(x, y, c)
			}
		}
		var b bytes.Buffer
		if err := enc(&b, img); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b.Bytes())
		want[rel] = hex.EncodeToString(sum[:])
	}
	pngEnc := func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }
	jpegEnc := func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }
	for ci, class := range []string{"cat", "dog", "zebra"} {
		for i := 0; i < 4; i++ {
			write(fmt.Sprintf("%s/img_%03d.png", class, i), pngEnc, 8+i, 6+ci, color.RGBA{uint8(40 * i), uint8(80 * ci), 7, 255})
		}
	}
	write("dog/photo one.v2.jpg", jpegEnc, 16, 12, color.RGBA{200, 10, 10, 255})

	table := filepath.Join(t.TempDir(), "table")
	out := run(t, bin, "import", tree, table)
	if !regexp.MustCompile(`^version 0: created the table with 13 rows in 1 files \(2\.1 KiB\) in \d+\.\ds\n$`).MatchString(out) {
		t.Errorf("deltafs import printed %q, want the README's line", out)
	}
	mnt := mount(t, bin, table, "--class-column", "label", "--id-column", "path")
	if ls, err := exec.Command("ls", filepath.Join(mnt, "latest", "shard", "0", "cat")).Output(); err != nil ||
		strings.Join(strings.Fields(string(ls)), "  ") != "cat%2Fimg_000.png.png  cat%2Fimg_001.png.png  cat%2Fimg_002.png.png  cat%2Fimg_003.png.png" {
		t.Errorf("ls latest/shard/0/cat: %v %q, want the README's listing", err, ls)
	}

	const script = `
import hashlib, json, os, sys
from torchvision import datasets
ds = datasets.ImageFolder(sys.argv[1])
out = []
for i, (path, target) in enumerate(ds.samples):
    img, y = ds[i]  # decodes the image, as training would
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    out.append([os.path.relpath(path, sys.argv[1]), ds.classes[y], img.size[0], img.size[1], digest])
print(json.dumps({"classes": ds.classes, "samples": out}))
`
	// The README's one-liner, as written there.
	const readme = `from torchvision import datasets; ds = datasets.ImageFolder("MNT/latest/shard/0"); print(len(ds), ds.classes)`
	if line, err := exec.Command(python, "-c", strings.Replace(readme, "MNT", mnt, 1)).Output(); err != nil || string(line) != "13 ['cat', 'dog', 'zebra']\n" {
		t.Errorf("the README's ImageFolder line printed %q (%v), want 13 ['cat', 'dog', 'zebra']", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := exec.CommandContext(ctx, python, "-c", script, filepath.Join(mnt, "latest", "shard", "0")).Output()
	if err != nil {
		t.Fatalf("ImageFolder: %v\n%s%s", err, res, stderrOf(err))
	}
	var got struct {
		Classes []string
		Samples [][]any
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatalf("ImageFolder printed %q: %v", res, err)
	}
	if fmt.Sprint(got.Classes) != "[cat dog zebra]" {
		t.Errorf("ImageFolder classes %v, want [cat dog zebra]", got.Classes)
	}
	seen := map[string]bool{}
	for _, s := range got.Samples {
		rel, class, digest := s[0].(string), s[1].(string), s[4].(string)
		dir, name := filepath.Split(rel)
		ext := filepath.Ext(name)
		orig, ok := sample.UnescapeName(strings.TrimSuffix(name, ext))
		if !ok || want[orig] == "" || strings.TrimSuffix(dir, "/") != class || !strings.HasPrefix(orig, class+"/") || filepath.Ext(orig) != ext {
			t.Errorf("sample %s (class %s): not named by an original path of its class (unescaped: %q)", rel, class, orig)
			continue
		}
		if digest != want[orig] {
			t.Errorf("sample %s: other bytes than %s", rel, orig)
		}
		seen[orig] = true
	}
	if len(seen) != len(want) || len(got.Samples) != len(want) {
		var missing []string
		for rel := range want {
			if !seen[rel] {
				missing = append(missing, rel)
			}
		}
		sort.Strings(missing)
		t.Errorf("ImageFolder read %d samples, %d of the tree's %d images; missing %v", len(got.Samples), len(seen), len(want), missing)
	}
	if _, err := os.Stat(filepath.Join(mnt, "latest", "shard", "0", "cat", "cat%2Fimg_001.png.png")); err != nil {
		t.Errorf("the README's example name: %v", err)
	}
}
