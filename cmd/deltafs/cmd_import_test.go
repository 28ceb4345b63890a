package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

func execImport(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newImportCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

var importLine = regexp.MustCompile(`^version (\d+): (created the table with|appended|overwrote \d+ files with) (\d+) rows in (\d+) files \(.*\) in [0-9.]+s\n$`)

func TestImportCommandMNIST(t *testing.T) {
	table := filepath.Join(t.TempDir(), "mnist")
	out, err := execImport(t, "../../testdata/mnist/mnist-test.npy.gz", table, "--rows-per-file", "2500")
	if err != nil {
		t.Fatal(err)
	}
	m := importLine.FindStringSubmatch(out)
	if m == nil || m[1] != "0" || m[2] != "created the table with" || m[3] != "10000" || m[4] != "4" {
		t.Fatalf("output %q", out)
	}
	tbl, err := openTable(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	s, err := tbl.Log.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.NumRows() != 10000 || len(s.Files) != 4 || s.CommitInfo.Operation != "CREATE TABLE" {
		t.Fatalf("snapshot: %d rows, %d files, %q", s.NumRows(), len(s.Files), s.CommitInfo.Operation)
	}
	out, err = execImport(t, "../../testdata/mnist/mnist-test.npy.gz", table, "--mode", "overwrite")
	if m := importLine.FindStringSubmatch(out); err != nil || m == nil || m[1] != "1" || m[2] != "overwrote 4 files with" {
		t.Fatalf("overwrite: %q %v", out, err)
	}
}

func TestImportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.npy")
	os.WriteFile(corrupt, []byte("\x93NUMPY\x01\x00\x10\x00{'descr': <i8  \n"), 0o644)
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello"), 0o644)
	notTable := filepath.Join(dir, "nottable")
	os.MkdirAll(notTable, 0o755)
	os.WriteFile(filepath.Join(notTable, "README"), []byte("mine"), 0o644)
	mnist := "../../testdata/mnist/mnist-test.npy.gz"
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing source", []string{"import", filepath.Join(dir, "nope"), filepath.Join(dir, "t1")}, 1, "does not exist"},
		{"unknown kind", []string{"import", text, filepath.Join(dir, "t2")}, 1, "unknown kind (want an ImageFolder directory or a .npy / .npy.gz file)"},
		{"corrupt header", []string{"import", corrupt, filepath.Join(dir, "t3")}, 1, "npy header:"},
		{"not a Delta table", []string{"import", mnist, notTable}, 1, "is not a Delta table and is not empty (it holds README)"},
		{"table is a file", []string{"import", mnist, text}, 1, "notes.txt exists and is not a directory"},
		{"bad mode", []string{"import", mnist, filepath.Join(dir, "t4"), "--mode", "merge"}, 2, `--mode "merge": want append or overwrite`},
		{"bad rows per file", []string{"import", mnist, filepath.Join(dir, "t5"), "--rows-per-file", "0"}, 2, "--rows-per-file 0"},
		{"one argument", []string{"import", mnist}, 2, "want SRC TABLE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := testkit.RunMain(t, nil, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "deltafs: ") || stdout != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit %d and %q", code, stderr, stdout, c.code, c.want)
			}
		})
	}
	if entries, _ := os.ReadDir(notTable); len(entries) != 1 {
		t.Errorf("a refused import wrote into the foreign directory: %d entries", len(entries))
	}
}

// writeSmallNpy writes n float64 records without ids.
func writeSmallNpy(t *testing.T, path string, n int, base float64) {
	t.Helper()
	b := testkit.NPYHeader(fmt.Sprintf("{'descr': [('x', '<f8')], 'fortran_order': False, 'shape': (%d,), }", n))
	for i := range n {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(base+float64(i)))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportTwoProcesses: two sequences of separate deltafs processes, 5
// appends each, race on one table: exactly 10 new versions, every commit's
// rows present once, ids unique.
func TestImportTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	const procs, appends, rows = 2, 5, 4
	var wg sync.WaitGroup
	errs := make(chan string, procs*appends)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range appends {
				src := filepath.Join(dir, fmt.Sprintf("p%d-a%d.npy", p, a))
				writeSmallNpy(t, src, rows, float64(1000*p+100*a))
				stdout, stderr, code := testkit.RunMain(t, nil, "import", src, table, "--rows-per-file", "2")
				if code != 0 || importLine.FindStringSubmatch(stdout) == nil {
					errs <- fmt.Sprintf("process %d append %d: exit %d: %s%s", p, a, code, stdout, stderr)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	ctx := context.Background()
	tbl, err := openTable(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	s, err := tbl.Log.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != procs*appends-1 || s.NumRows() != procs*appends*rows || len(s.Files) != procs*appends*2 {
		t.Fatalf("latest version %d, %d rows, %d files", s.Version, s.NumRows(), len(s.Files))
	}
	versions, err := tbl.Log.Versions(ctx)
	if err != nil || len(versions) != procs*appends {
		t.Fatalf("versions %v %v", versions, err)
	}
	// Each commit's rows are there once: ids 0..39, x values as written.
	if err := checkIDsAndValues(ctx, s, procs, appends, rows); err != nil {
		t.Fatal(err)
	}
}

// checkIDsAndValues reads every live row: ids are 0..n-1 and each written x
// value appears once.
func checkIDsAndValues(ctx context.Context, s *snapshot.Snapshot, procs, appends, rows int) error {
	type row struct {
		ID int64   `parquet:"id"`
		X  float64 `parquet:"x"`
	}
	ids := map[int64]bool{}
	xs := map[float64]int{}
	for _, f := range s.Files {
		key, err := s.FileKey(f.Path)
		if err != nil {
			return err
		}
		st := s.Table.Storage()
		pf, err := parquet.OpenFile(storage.ReaderAt(ctx, st, key), f.Size)
		if err != nil {
			return err
		}
		r := parquet.NewGenericReader[row](pf)
		buf := make([]row, pf.NumRows())
		n, err := r.Read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		r.Close()
		for _, v := range buf[:n] {
			if ids[v.ID] {
				return fmt.Errorf("id %d twice", v.ID)
			}
			ids[v.ID] = true
			xs[v.X]++
		}
	}
	for i := range int64(procs * appends * rows) {
		if !ids[i] {
			return fmt.Errorf("id %d missing", i)
		}
	}
	for p := range procs {
		for a := range appends {
			for i := range rows {
				if x := float64(1000*p + 100*a + i); xs[x] != 1 {
					return fmt.Errorf("x %v present %d times", x, xs[x])
				}
			}
		}
	}
	return nil
}

// TestImportCommandS3 imports into an s3:// table (in-process gofakes3)
// with the global --s3-* options and credentials from the environment.
func TestImportCommandS3(t *testing.T) {
	endpoint := s3test.StartGofakes3(t)
	s3test.CreateBucket(t, endpoint, "imports")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	saved := global.storage
	t.Cleanup(func() { global.storage = saved })
	global.storage.S3 = storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region}
	for i, want := range []string{"created the table with", "appended"} {
		out, err := execImport(t, "../../testdata/mnist/mnist-test.npy.gz", "s3://imports/tables/mnist")
		m := importLine.FindStringSubmatch(out)
		if err != nil || m == nil || m[1] != fmt.Sprint(i) || m[2] != want || m[3] != "10000" {
			t.Fatalf("import %d: %q %v", i, out, err)
		}
	}
	tbl, err := openTable(context.Background(), "s3://imports/tables/mnist")
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	s, err := tbl.Log.Snapshot(context.Background(), -1)
	if err != nil || s.NumRows() != 20000 {
		t.Fatalf("snapshot: %v %v", s, err)
	}
}

// TestImportMissingBucket: `deltafs import` into a bucket (a container on
// Azure) that does not exist fails with one line that says so, in the
// words `deltafs log` uses for the same location, on every cloud (on GCS
// the import said "object does not exist": the upload's 404 read as a
// missing object).
func TestImportMissingBucket(t *testing.T) {
	bin := mounttest.Binary(t)
	src := filepath.Join(testkit.ModuleRoot(), "testdata", "mnist", "demo", "demo-2-append.npy.gz")
	s3 := s3test.NewFake(t, nil)
	gcs := gcstest.NewFake(t, nil)
	az := aztest.Start(t, aztest.Options{})
	for _, tc := range []struct {
		name, loc string
		env       func(t *testing.T)
		flags     []string
		want      string
	}{
		{"s3", "s3://nobucket/t", func(t *testing.T) { s3Env(t, s3.Endpoint) }, s3Flags(s3.Endpoint), "bucket nobucket does not exist"},
		{"gcs", "gs://nobucket/t", func(t *testing.T) { gcstest.Env(t) }, []string{"--gcs-endpoint", gcs.Endpoint, "--gcs-anonymous"}, "bucket nobucket does not exist"},
		{"azure", "az://nobucket/t", func(t *testing.T) { azEnv(t, az.Endpoint) }, nil, "container nobucket does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env(t)
			for _, args := range [][]string{{"import", src, tc.loc}, {"log", tc.loc}} {
				_, stderr, code := runBin(t, bin, time.Minute, append(args, tc.flags...)...)
				msg := lastLine(stderr)
				if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(msg, tc.loc+": "+tc.want) {
					t.Errorf("deltafs %s: exit %d, stderr %q; want status 1 and one line saying %s: %s", args[0], code, stderr, tc.loc, tc.want)
				}
				if strings.Contains(msg, "object does not exist") {
					t.Errorf("deltafs %s: %q says an object is missing, want only that the bucket is", args[0], msg)
				}
			}
		})
	}
}
