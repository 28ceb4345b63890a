package testkit

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The real MNIST sets (testdata/mnist/README.md): 10,000 test digits (ids
// 60,000 .. 69,999) and 60,000 training digits (ids 0 .. 59,999).
var (
	MNISTTest  = filepath.Join(ModuleRoot(), "testdata", "mnist", "mnist-test.npy.gz")
	MNISTTrain = filepath.Join(ModuleRoot(), "testdata", "mnist", "mnist-train.npy.gz")
)

// MNISTPerClass is how many digits of each class (0 .. 9) MNISTTest holds.
var MNISTPerClass = []int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}

// Digit is one MNIST record; its tags name the columns `deltafs import`
// writes, so that tests can write digits to Parquet as the importer would.
type Digit struct {
	ID     int64  `parquet:"id"`
	Label  int32  `parquet:"label"`
	Pixels []byte `parquet:"pixels"` // 28x28, row-major, 8-bit gray
}

// The record layout of the MNIST .npy files: id (little-endian uint64),
// label (uint8), 784 pixels.
const (
	npyPrelude  = 10 // magic, version, header length
	digitRecord = 8 + 1 + 28*28
)

// MNIST reads every record of a gzipped MNIST .npy file (MNISTTest,
// MNISTTrain) in file order, as testdata/mnist/README.md describes it: the
// test fails on a file that is not a .npy file or ends inside a record.
func MNIST(t testing.TB, path string) []Digit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := bufio.NewReader(gz)
	head := make([]byte, npyPrelude)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:6]) != "\x93NUMPY" {
		t.Fatalf("%s: not a .npy file (%v)", path, err)
	}
	if _, err := r.Discard(int(binary.LittleEndian.Uint16(head[8:10]))); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []Digit
	rec := make([]byte, digitRecord)
	for {
		if _, err := io.ReadFull(r, rec); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, Digit{
			ID:     int64(binary.LittleEndian.Uint64(rec)),
			Label:  int32(rec[8]),
			Pixels: append([]byte(nil), rec[9:]...),
		})
	}
}

// MNISTNPY is digits as an uncompressed .npy file in the layout of
// testdata/mnist (its README): a source for `deltafs import`.
func MNISTNPY(digits []Digit) []byte {
	b := NPYHeader(fmt.Sprintf("{'descr': [('id', '<i8'), ('label', '|u1'), ('pixels', '|u1', (784,))], 'fortran_order': False, 'shape': (%d,), }", len(digits)))
	for _, d := range digits {
		b = binary.LittleEndian.AppendUint64(b, uint64(d.ID))
		b = append(b, byte(d.Label))
		b = append(b, d.Pixels...)
	}
	return b
}
