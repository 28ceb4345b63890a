package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// parquetTable is a one-version table of real Parquet files: the real
// page.Fetcher reads its pixels; Rows decodes id and label with parquet-go
// directly (standing in for package scan).
type parquetTable struct {
	dir  string
	snap *snapshot.Snapshot
}

func (p *parquetTable) Versions(ctx context.Context) ([]snapshot.VersionInfo, error) {
	return []snapshot.VersionInfo{{Version: 0, Timestamp: p.snap.Timestamp}}, nil
}
func (p *parquetTable) Snapshot(ctx context.Context, v int64) (*snapshot.Snapshot, error) {
	return p.snap, nil
}
func (p *parquetTable) VersionAt(ctx context.Context, ts time.Time) (int64, error) { return 0, nil }
func (p *parquetTable) ScanJSON(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, fn func(int64, []byte)) error {
	return errors.New("not supported")
}

// Columns implements sample.Rows: id and label, read with parquet-go.
func (p *parquetTable) Columns(ctx context.Context, snap *snapshot.Snapshot, af *snapshot.AddFile, columns []string, fn func(*scan.Batch) error) error {
	b := &scan.Batch{Cols: make([]scan.Vector, len(columns))}
	for i := range columns {
		b.Cols[i].Kind = scan.KindInt
	}
	err := p.scan(af, columns, func(row int64, vals []any) {
		b.Rows = append(b.Rows, row)
		for i, v := range vals {
			switch x := v.(type) {
			case int64:
				b.Cols[i].Int = append(b.Cols[i].Int, x)
			case int32:
				b.Cols[i].Int = append(b.Cols[i].Int, int64(x))
			}
		}
	})
	if err != nil {
		return err
	}
	return fn(b)
}

func (p *parquetTable) scan(af *snapshot.AddFile, columns []string, fn func(int64, []any)) error {
	f, err := os.Open(filepath.Join(p.dir, af.Path))
	if err != nil {
		return err
	}
	defer f.Close()
	r := parquet.NewGenericReader[struct {
		ID    int64 `parquet:"id"`
		Label int32 `parquet:"label"`
	}](f)
	defer r.Close()
	buf := make([]struct {
		ID    int64 `parquet:"id"`
		Label int32 `parquet:"label"`
	}, 1024)
	vals := make([]any, len(columns))
	row := int64(0)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			for i, c := range columns {
				switch c {
				case "id":
					vals[i] = b.ID
				case "label":
					vals[i] = b.Label
				default:
					return fmt.Errorf("column %s", c)
				}
			}
			fn(row, vals)
			row++
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func writeParquetTable(t testing.TB, rows []testkit.Digit, perFile int) *parquetTable {
	dir := t.TempDir()
	snap := &snapshot.Snapshot{Timestamp: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Schema: &snapshot.StructType{Fields: []snapshot.StructField{
		{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "label", Type: &snapshot.PrimitiveType{Name: "integer"}},
		{Name: "pixels", Type: &snapshot.PrimitiveType{Name: "binary"}},
	}}}
	for i := 0; len(rows) > 0; i++ {
		k := min(perFile, len(rows))
		name := fmt.Sprintf("part-%05d.snappy.parquet", i)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[testkit.Digit](f, parquet.Compression(&parquet.Snappy))
		if _, err := w.Write(rows[:k]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		f.Close()
		snap.Files = append(snap.Files, &snapshot.AddFile{Path: name, Size: st.Size(), NumRecords: int64(k),
			Stats: `{"numRecords":1,"minValues":{"label":0},"maxValues":{"label":9}}`})
		rows = rows[k:]
	}
	return &parquetTable{dir: dir, snap: snap}
}

// TestReadRealParquet mounts the 10,000 MNIST test digits from real Parquet
// files (page-level reads through the offset index) as PNG class folders
// and times a listing and two full read passes against the same files
// copied to tmpfs. DELTAFS_PERF_TRAIN=1 uses the 60,000 training digits.
func TestReadRealParquet(t *testing.T) {
	src := testkit.MNISTTest
	if os.Getenv("DELTAFS_PERF_TRAIN") != "" {
		src = testkit.MNISTTrain
	}
	digits := testkit.MNIST(t, src)
	pt := writeParquetTable(t, digits, 10000)
	st, err := storage.NewLocal(pt.dir)
	if err != nil {
		t.Fatal(err)
	}
	fetcher := page.NewFetcher(st, page.Options{})
	s, err := sample.New(sample.Options{Table: pt, Rows: pt, Fetcher: fetcher,
		Spec:    sample.Spec{Image: sample.Image{H: 28, W: 28, C: 1}, ClassColumn: "label"},
		FileKey: func(_ *snapshot.Snapshot, p string) (string, error) { return p, nil }})
	if err != nil {
		t.Fatal(err)
	}
	root, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s})
	if err != nil {
		t.Fatal(err)
	}
	mnt := mounttest.InProcessRaw(t, root, root.MountOptions("perf", false, false))
	sd := filepath.Join(mnt, "version", "0", "shard", "0")

	walk := func(dir string) ([]string, time.Duration) {
		start := time.Now()
		var files []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != "_samples.tsv" {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files, time.Since(start)
	}
	read := func(files []string) (time.Duration, int64) {
		start := time.Now()
		var n int64
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n += int64(len(b))
		}
		return time.Since(start), n
	}
	files, ls1 := walk(sd)
	_, ls2 := walk(sd)
	if len(files) != len(digits) {
		t.Fatalf("%d files, want %d", len(files), len(digits))
	}
	r1, bytes := read(files)
	before := s.Counters().Reads.Load()
	r2, _ := read(files)
	pass2Reads := s.Counters().Reads.Load() - before

	// The same PNGs on tmpfs.
	shm, err := os.MkdirTemp("/dev/shm", "deltafs-perf-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shm)
	if err := os.CopyFS(shm, os.DirFS(sd)); err != nil {
		t.Fatal(err)
	}
	tfiles, tls := walk(shm)
	tr, _ := read(tfiles)
	rate := func(d time.Duration) float64 { return float64(len(files)) / d.Seconds() }
	t.Logf("%d samples (%d MB of PNG) from %d Parquet files:", len(files), bytes>>20, len(pt.snap.Files))
	t.Logf("  walk (ls -R): deltafs %v then %v; tmpfs %v", ls1.Round(time.Millisecond), ls2.Round(time.Millisecond), tls.Round(time.Millisecond))
	t.Logf("  full read: deltafs pass 1 %v (%.0f files/s), pass 2 %v (%.0f files/s); tmpfs %v (%.0f files/s)",
		r1.Round(time.Millisecond), rate(r1), r2.Round(time.Millisecond), rate(r2), tr.Round(time.Millisecond), rate(tr))
	t.Logf("  fetcher %+v; sample reads reaching the server in pass 2: %d", fetcher.Stats(), pass2Reads)
}
