package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/writer"
)

const (
	// SHA-256 of all test pixels in file order (testdata/mnist/README.md).
	mnistTestPixelsSHA = "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161"
)

// TestImportMNISTTest imports the real MNIST test set and reads it back.
func TestImportMNISTTest(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	res, err := importPath(t, testkit.MNISTTest, dir, writer.Options{RowsPerFile: 4000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported 10,000 MNIST rows in %v: %d files, %d bytes", time.Since(start), res.Files, res.Bytes)
	if res.Version != 0 || res.Rows != 10000 || res.Files != 3 || res.FirstID != -1 {
		t.Fatalf("result %+v", res)
	}

	s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	if s.NumRows() != 10000 || len(s.Files) != 3 {
		t.Fatalf("snapshot: %d rows, %d files", s.NumRows(), len(s.Files))
	}
	if got := schemaString(s.Schema); got != "id:long,label:short,pixels:binary" {
		t.Fatalf("schema %s", got)
	}

	src := testkit.MNIST(t, testkit.MNISTTest)
	rows := snaptest.LiveRows(t, dir)
	if len(rows) != 10000 || len(src) != 10000 {
		t.Fatalf("%d rows, %d in the source", len(rows), len(src))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
	counts := make([]int, 10)
	h := sha256.New()
	for i, r := range rows {
		id := r["id"].(int64)
		if id != int64(60000+i) {
			t.Fatalf("row %d: id %d", i, id)
		}
		counts[r["label"].(int32)]++
		h.Write(r["pixels"].([]byte))
	}
	if got := fmt.Sprint(counts); got != "[980 1135 1032 1010 982 892 958 1028 974 1009]" {
		t.Errorf("label counts %s", got)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != mnistTestPixelsSHA {
		t.Errorf("pixels SHA-256 %s", got)
	}
	for _, i := range []int{0, 1, 4321, 9999} {
		if rows[i]["id"].(int64) != src[i].ID || rows[i]["label"].(int32) != src[i].Label || !bytes.Equal(rows[i]["pixels"].([]byte), src[i].Pixels) {
			t.Errorf("record %d differs from the source", i)
		}
	}
}

// TestImportMNISTTrainThenTest imports the 60,000 training digits, then
// appends the test set: ids from the file are kept, both sets are there.
func TestImportMNISTTrainThenTest(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 70,000 rows")
	}
	dir := t.TempDir()
	start := time.Now()
	res, err := importPath(t, testkit.MNISTTrain, dir, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported 60,000 MNIST rows in %v: %d files, %d bytes", time.Since(start), res.Files, res.Bytes)
	if res.Rows != 60000 || res.Files != 6 {
		t.Fatalf("result %+v", res)
	}
	res, err = importPath(t, testkit.MNISTTest, dir, writer.Options{})
	if err != nil || res.Version != 1 || res.Rows != 10000 {
		t.Fatalf("append: %+v %v", res, err)
	}
	s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	if s.NumRows() != 70000 {
		t.Fatalf("%d rows", s.NumRows())
	}
	// Pixels of a few training digits, read straight from the data files.
	train := testkit.MNIST(t, testkit.MNISTTrain)
	want := map[int64][]byte{0: train[0].Pixels, 31337: train[31337].Pixels, 59999: train[59999].Pixels}
	for _, f := range s.Files {
		for _, r := range testkit.ParquetRows(t, filepath.Join(dir, f.Path)) {
			if px, ok := want[r["id"].(int64)]; ok {
				if !bytes.Equal(px, r["pixels"].([]byte)) {
					t.Errorf("id %d: pixels differ", r["id"])
				}
				delete(want, r["id"].(int64))
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("ids not found: %v", want)
	}
}
