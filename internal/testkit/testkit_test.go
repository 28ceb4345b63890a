package testkit

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// The helpers are checked against what testdata says of itself, so that a
// broken helper cannot make the tests that use it pass on nothing.

// TestMNIST: the test set as testdata/mnist/README.md describes it: 10,000
// digits with ids 60,000 .. 69,999 in order, MNISTPerClass per label, and
// the pixels' SHA-256; MNISTNPY writes what MNIST reads back.
func TestMNIST(t *testing.T) {
	digits := MNIST(t, MNISTTest)
	if len(digits) != 10000 {
		t.Fatalf("%d digits", len(digits))
	}
	counts := make([]int, 10)
	h := sha256.New()
	for i, d := range digits {
		if d.ID != int64(60000+i) || len(d.Pixels) != 784 {
			t.Fatalf("digit %d: id %d, %d pixels", i, d.ID, len(d.Pixels))
		}
		counts[d.Label]++
		h.Write(d.Pixels)
	}
	if fmt.Sprint(counts) != fmt.Sprint(MNISTPerClass) {
		t.Errorf("per class %v, want %v", counts, MNISTPerClass)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161" {
		t.Errorf("pixels SHA-256 %s", got)
	}

	raw := MNISTNPY(digits[:3])
	if len(NPYHeader("{}"))%64 != 0 || (len(raw)-3*digitRecord)%64 != 0 {
		t.Fatalf("MNISTNPY: %d bytes, header of {}: %d", len(raw), len(NPYHeader("{}")))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	p := filepath.Join(t.TempDir(), "three.npy.gz")
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back := MNIST(t, p)
	if len(back) != 3 || back[2].ID != digits[2].ID || back[2].Label != digits[2].Label || !bytes.Equal(back[2].Pixels, digits[2].Pixels) {
		t.Fatalf("MNISTNPY then MNIST: %d digits", len(back))
	}
}

// TestCopyTable: the copy holds every file of the table, byte for byte,
// and is the test's own.
func TestCopyTable(t *testing.T) {
	src := filepath.Join(Tables(), "dat-with_checkpoint")
	dst := CopyTable(t, "dat-with_checkpoint")
	if !strings.HasPrefix(dst, os.TempDir()) || filepath.Base(dst) != "dat-with_checkpoint" {
		t.Fatalf("copy at %s", dst)
	}
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: copy differs (%v)", rel, err)
		}
		n++
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("%d files compared: %v", n, err)
	}
	var exp map[string]struct {
		Versions          map[string]any `json:"versions"`
		Unreconstructable []int64        `json:"unreconstructable_versions"`
	}
	Expected(t, &exp)
	e := exp["dat-with_checkpoint"]
	if vs := Readable(e.Versions, e.Unreconstructable); len(vs) == 0 || vs[0] != 0 || len(vs) != len(e.Versions)-len(e.Unreconstructable) {
		t.Fatalf("readable versions %v", vs)
	}
}

// TestParquetRows reads back what parquet-go wrote, nulls included.
func TestParquetRows(t *testing.T) {
	type row struct {
		A int64   `parquet:"a"`
		B *string `parquet:"b,optional"`
		C float64 `parquet:"c"`
	}
	s := "x"
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	if _, err := w.Write([]row{{1, &s, 0.5}, {2, nil, 1.5}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ParquetRows(t, p))
	if want := "[map[a:1 b:[120] c:0.5] map[a:2 b:<nil> c:1.5]]"; got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// TestBoundedAndSocket: Bounded returns once fn does; Socket is a socket.
func TestBoundedAndSocket(t *testing.T) {
	ran := false
	Bounded(t, "fn", 10*time.Second, func() { ran = true })
	if !ran {
		t.Fatal("fn did not run")
	}
	fi, err := os.Lstat(Socket(t))
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Fatalf("Socket: %v %v", fi, err)
	}
}

// TestMain is MainProcess with a command that says what it was given.
func TestMain(m *testing.M) { MainProcess(m, "echo", echoMain) }

// echoMain prints its arguments and $X, one line on stderr, and exits 3
// when its first argument is "fail".
func echoMain() {
	fmt.Println(strings.Join(os.Args, " "), os.Getenv("X"))
	fmt.Fprintln(os.Stderr, "to stderr")
	if len(os.Args) > 1 && os.Args[1] == "fail" {
		os.Exit(3)
	}
}

// TestRunMain: RunMain runs the command as a separate process, with its
// name, arguments and environment, and returns what it printed on each
// stream and its exit status.
func TestRunMain(t *testing.T) {
	out, errOut, code := RunMain(t, []string{"X=x"}, "hello", "-test.v")
	if out != "echo hello -test.v x\n" || errOut != "to stderr\n" || code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, _, code = RunMain(t, nil, "fail"); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
}
