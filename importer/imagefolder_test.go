package importer

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/writer"
)

// writePNG writes a small real PNG whose pixels depend on seed, and returns
// its bytes.
func writePNG(t *testing.T, path string, seed int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 5, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(seed*31 + i)
	}
	img.Set(0, 0, color.Gray{Y: byte(seed)})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageTree builds root/<class>/... and returns the relative paths of the
// images in torchvision's order with their bytes.
func imageTree(t *testing.T, root string, seed int) (order []string, content map[string][]byte) {
	t.Helper()
	content = map[string][]byte{}
	for i, rel := range []string{"cat/b.png", "cat/a.PNG", "cat/sub/c.jpg", "cat/sub-z.Jpeg", "dog/1.png", "dog/10.webp"} {
		content[rel] = writePNG(t, filepath.Join(root, filepath.FromSlash(rel)), seed+i)
	}
	// Not images, or not in a class folder: ignored.
	os.WriteFile(filepath.Join(root, "cat", "notes.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "cat", "png"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "top.png"), []byte("x"), 0o644)
	// torchvision: sorted(os.walk(cat)) visits cat, cat/sub; file names sorted in each.
	order = []string{"cat/a.PNG", "cat/b.png", "cat/sub-z.Jpeg", "cat/sub/c.jpg", "dog/1.png", "dog/10.webp"}
	return order, content
}

func TestImageFolder(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	order, content := imageTree(t, src, 0)
	table := filepath.Join(dir, "table")

	res, err := importPath(t, src, table, writer.Options{RowsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 0 || res.Rows != 6 || res.Files != 2 || res.FirstID != 0 {
		t.Fatalf("result %+v", res)
	}
	s := snaptest.Version(t, snaptest.OpenDir(t, table), -1)
	if got := schemaString(s.Schema); got != "id:long,label:string,path:string,content:binary" {
		t.Fatalf("schema %s", got)
	}
	rows := snaptest.LiveRows(t, table)
	sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
	if len(rows) != len(order) {
		t.Fatalf("%d rows", len(rows))
	}
	// Ids follow the seeded shuffle of torchvision's order.
	perm := shuffledOrder(len(order), ShuffleSeed)
	for i, r := range rows {
		p := string(r["path"].([]byte))
		want := order[perm[i]]
		if r["id"] != int64(i) || p != want || string(r["label"].([]byte)) != strings.Split(want, "/")[0] {
			t.Errorf("row %d: id %v path %s label %s, want %s", i, r["id"], p, r["label"], want)
		}
		if !bytes.Equal(r["content"].([]byte), content[p]) {
			t.Errorf("%s: content differs", p)
		}
		if _, err := png.Decode(bytes.NewReader(r["content"].([]byte))); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	// Append: ids continue.
	src2 := filepath.Join(dir, "src2")
	writePNG(t, filepath.Join(src2, "bird", "x.png"), 100)
	writePNG(t, filepath.Join(src2, "cat", "y.png"), 101)
	res, err = importPath(t, src2, table, writer.Options{})
	if err != nil || res.Version != 1 || res.FirstID != 6 || res.Rows != 2 {
		t.Fatalf("append: %+v %v", res, err)
	}
	rows = snaptest.LiveRows(t, table)
	ids := map[int64]string{}
	for _, r := range rows {
		ids[r["id"].(int64)] = string(r["path"].([]byte))
	}
	second := []string{"bird/x.png", "cat/y.png"}
	perm = shuffledOrder(2, ShuffleSeed)
	if len(rows) != 8 || ids[6] != second[perm[0]] || ids[7] != second[perm[1]] {
		t.Fatalf("after append: %v", ids)
	}

	// Overwrite: removes for every live file, then only the new files.
	before := snaptest.Version(t, snaptest.OpenDir(t, table), -1)
	res, err = importPath(t, src2, table, writer.Options{Mode: writer.ModeOverwrite})
	if err != nil || res.Version != 2 || res.Removed != len(before.Files) || res.FirstID != 8 {
		t.Fatalf("overwrite: %+v %v", res, err)
	}
	after := snaptest.Version(t, snaptest.OpenDir(t, table), -1)
	if after.NumRows() != 2 || len(after.Files) != 1 {
		t.Fatalf("after overwrite: %d rows, %d files", after.NumRows(), len(after.Files))
	}
	for _, f := range before.Files {
		if f.Path == after.Files[0].Path {
			t.Fatalf("overwrite kept %s", f.Path)
		}
	}
	rows = snaptest.LiveRows(t, table)
	sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
	if len(rows) != 2 || string(rows[0]["path"].([]byte)) != second[perm[0]] || rows[0]["id"] != int64(8) {
		t.Fatalf("after overwrite: %v", rows[0]["path"])
	}
}

// TestImageFolderShuffledOrder: the rows are not written class by class, and
// the order is a permutation fixed by the tree alone (the same ids on every
// import of the same tree).
func TestImageFolderShuffledOrder(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	classes := []string{"a", "b", "c", "d"}
	for ci, c := range classes {
		for i := 0; i < 30; i++ {
			writePNG(t, filepath.Join(src, c, fmt.Sprintf("%02d.png", i)), ci*100+i)
		}
	}
	paths := func(table string) []string {
		rows := snaptest.LiveRows(t, table)
		sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
		var out []string
		for i, r := range rows {
			if r["id"] != int64(i) {
				t.Fatalf("ids not 0..n-1: row %d has %v", i, r["id"])
			}
			out = append(out, string(r["path"].([]byte)))
		}
		return out
	}
	var got [2][]string
	for k := range got {
		table := filepath.Join(dir, fmt.Sprint("table", k))
		if _, err := importPath(t, src, table, writer.Options{RowsPerFile: 7}); err != nil {
			t.Fatal(err)
		}
		got[k] = paths(table)
	}
	if strings.Join(got[0], ",") != strings.Join(got[1], ",") {
		t.Fatalf("two imports of one tree differ:\n%v\n%v", got[0], got[1])
	}
	if len(got[0]) != 120 {
		t.Fatalf("%d rows, want 120", len(got[0]))
	}
	sorted := append([]string(nil), got[0]...)
	sort.Strings(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			t.Fatalf("%s imported twice", sorted[i])
		}
	}
	// Every third of the rows (what --shards 3 mounts) holds every class.
	for k := 0; k < 3; k++ {
		seen := map[string]bool{}
		for _, p := range got[0][k*40 : (k+1)*40] {
			seen[strings.Split(p, "/")[0]] = true
		}
		if len(seen) != len(classes) {
			t.Errorf("rows %d..%d hold classes %v, want all of %v", k*40, (k+1)*40, seen, classes)
		}
	}
}

func TestImageFolderErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(filepath.Join(empty), 0o755)
	os.WriteFile(filepath.Join(empty, "a.png"), []byte("x"), 0o644)
	if _, err := Open(context.Background(), empty, Options{}); err == nil || !strings.Contains(err.Error(), "no class folder") {
		t.Errorf("no classes: %v", err)
	}
	noImages := filepath.Join(dir, "noimages")
	writePNG(t, filepath.Join(noImages, "a", "1.png"), 1)
	os.MkdirAll(filepath.Join(noImages, "b", "deep"), 0o755)
	os.WriteFile(filepath.Join(noImages, "b", "x.gif"), []byte("x"), 0o644)
	if _, err := Open(context.Background(), noImages, Options{}); err == nil || !strings.Contains(err.Error(), "no image in class folder(s) b") {
		t.Errorf("class without images: %v", err)
	}
}

func TestImageFolderSymlinks(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writePNG(t, filepath.Join(dir, "elsewhere", "z.png"), 3)
	writePNG(t, filepath.Join(src, "a", "1.png"), 1)
	// A linked class folder, a linked sub-folder and a loop are followed
	// (the loop once), as os.walk(followlinks=True) does.
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(src, "linked"))
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(src, "a", "sub"))
	os.Symlink(filepath.Join(src, "a"), filepath.Join(src, "a", "loop"))
	s, err := OpenImageFolder(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range s.items {
		got = append(got, it.rel)
	}
	if strings.Join(s.Classes(), ",") != "a,linked" || strings.Join(got, ",") != "a/1.png,a/sub/z.png,linked/z.png" {
		t.Fatalf("classes %v items %v", s.Classes(), got)
	}
}

func TestOpenDetectsKind(t *testing.T) {
	dir := t.TempDir()
	writeNpy(t, filepath.Join(dir, "a.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", make([]byte, 4))
	writeNpy(t, filepath.Join(dir, "data.bin.gz"), "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", make([]byte, 4))
	os.WriteFile(filepath.Join(dir, "notes.npy"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "x.gz"), []byte{0x1f, 0x8b, 0, 1, 2}, 0o644)
	writePNG(t, filepath.Join(dir, "tree", "c", "1.png"), 1)
	for name, want := range map[string]string{
		"a.npy": "npy", "data.bin.gz": "npy", "tree": "imagefolder",
		"notes.npy": "unknown kind", "x.gz": "unknown kind", "missing": "does not exist",
	} {
		s, err := Open(context.Background(), filepath.Join(dir, name), Options{})
		switch want {
		case "npy":
			if _, ok := s.(*Npy); !ok || err != nil {
				t.Errorf("%s: %T %v", name, s, err)
			}
		case "imagefolder":
			if _, ok := s.(*ImageFolder); !ok || err != nil {
				t.Errorf("%s: %T %v", name, s, err)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err %v, want %q", name, err, want)
			}
		}
		if s != nil {
			s.Close()
		}
	}
}
