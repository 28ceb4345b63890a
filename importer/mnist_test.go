package importer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/deltafs/deltafs/writer"
)

const (
	mnistTest  = "../testdata/mnist/mnist-test.npy.gz"
	mnistTrain = "../testdata/mnist/mnist-train.npy.gz"
	// SHA-256 of all test pixels in file order (testdata/mnist/README.md).
	mnistTestPixelsSHA = "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161"
)

type digit struct {
	id     int64
	label  byte
	pixels []byte
}

// readMNIST parses an MNIST .npy.gz as its README describes, independently
// of the importer.
func readMNIST(t *testing.T, path string) []digit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(gz)
	pre := make([]byte, 10)
	io.ReadFull(r, pre)
	io.CopyN(io.Discard, r, int64(binary.LittleEndian.Uint16(pre[8:])))
	var out []digit
	rec := make([]byte, 793)
	for {
		if _, err := io.ReadFull(r, rec); err != nil {
			break
		}
		out = append(out, digit{int64(binary.LittleEndian.Uint64(rec)), rec[8], bytes.Clone(rec[9:])})
	}
	return out
}

// TestImportMNISTTest imports the real MNIST test set and reads it back.
func TestImportMNISTTest(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	res, err := importPath(t, mnistTest, dir, writer.Options{RowsPerFile: 4000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported 10,000 MNIST rows in %v: %d files, %d bytes", time.Since(start), res.Files, res.Bytes)
	if res.Version != 0 || res.Rows != 10000 || res.Files != 3 || res.FirstID != -1 {
		t.Fatalf("result %+v", res)
	}

	s := latestSnapshot(t, dir)
	if s.NumRows() != 10000 || len(s.Files) != 3 {
		t.Fatalf("snapshot: %d rows, %d files", s.NumRows(), len(s.Files))
	}
	if got := schemaString(s.Schema); got != "id:long,label:short,pixels:binary" {
		t.Fatalf("schema %s", got)
	}

	src := readMNIST(t, mnistTest)
	rows := readRows(t, dir)
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
		if rows[i]["id"].(int64) != src[i].id || rows[i]["label"].(int32) != int32(src[i].label) || !bytes.Equal(rows[i]["pixels"].([]byte), src[i].pixels) {
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
	res, err := importPath(t, mnistTrain, dir, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported 60,000 MNIST rows in %v: %d files, %d bytes", time.Since(start), res.Files, res.Bytes)
	if res.Rows != 60000 || res.Files != 6 {
		t.Fatalf("result %+v", res)
	}
	res, err = importPath(t, mnistTest, dir, writer.Options{})
	if err != nil || res.Version != 1 || res.Rows != 10000 {
		t.Fatalf("append: %+v %v", res, err)
	}
	s := latestSnapshot(t, dir)
	if s.NumRows() != 70000 {
		t.Fatalf("%d rows", s.NumRows())
	}
	// Pixels of a few training digits, read straight from the data files.
	train := readMNIST(t, mnistTrain)
	want := map[int64][]byte{0: train[0].pixels, 31337: train[31337].pixels, 59999: train[59999].pixels}
	for _, f := range s.Files {
		for _, r := range readFileRows(t, filepath.Join(dir, f.Path)) {
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
