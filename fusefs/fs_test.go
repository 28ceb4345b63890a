package fusefs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// digits makes n rows (id, label, 2x2 pixels) with ids from base.
func digits(n, base int) [][]any {
	out := make([][]any, n)
	for i := range out {
		out[i] = []any{int64(base + i), int32(i % 11), []byte{byte(i), byte(i >> 8), 3, 4}}
	}
	return out
}

type mounted struct {
	dir  string
	tbl  *sampletest.Table
	s    *sample.Samples
	root *fusefs.Root
}

func mount(t *testing.T, tbl *sampletest.Table, spec sample.Spec, refresh time.Duration) *mounted {
	t.Helper()
	return mountWith(t, tbl, spec, fusefs.Options{Refresh: refresh})
}

// mountWith is mount with more of the Root's options (Samples is set here).
func mountWith(t *testing.T, tbl *sampletest.Table, spec sample.Spec, opts fusefs.Options) *mounted {
	t.Helper()
	s, err := sample.New(tbl.Options(spec))
	if err != nil {
		t.Fatal(err)
	}
	opts.Samples = s
	root, err := fusefs.NewRoot(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := mounttest.InProcessRaw(t, root, root.MountOptions("memtable", false, false))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go root.Run(ctx)
	return &mounted{dir: dir, tbl: tbl, s: s, root: root}
}

func TestTree(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: digits(30, 0)}, {Path: "b.parquet", Rows: digits(20, 100)}}, nil, nil)
	tbl.Commit(t0.Add(time.Hour), "WRITE", []sampletest.Add{{Path: "c.parquet", Rows: digits(5, 200)}}, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: 2}, time.Second)

	if got := testkit.DirNames(t, m.dir); fmt.Sprint(got) != "[.deltafs at latest version]" {
		t.Fatalf("root: %v", got)
	}
	if target, err := os.Readlink(filepath.Join(m.dir, "latest")); err != nil || target != "version/1" {
		t.Fatalf("latest -> %q, %v", target, err)
	}
	if got := testkit.DirNames(t, filepath.Join(m.dir, "version")); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("version/: %v", got)
	}
	v0 := filepath.Join(m.dir, "version", "0")
	if got := testkit.DirNames(t, v0); fmt.Sprint(got) != "[_commit.json _schema.json shard]" {
		t.Fatalf("version/0: %v", got)
	}
	commit, err := os.ReadFile(filepath.Join(v0, "_commit.json"))
	if err != nil || !strings.Contains(string(commit), `"operation": "WRITE"`) || !strings.Contains(string(commit), `"rows": 50`) {
		t.Fatalf("_commit.json: %s %v", commit, err)
	}
	if schema, err := os.ReadFile(filepath.Join(v0, "_schema.json")); err != nil || !strings.Contains(string(schema), `"pixels"`) {
		t.Fatalf("_schema.json: %s %v", schema, err)
	}
	if got := testkit.DirNames(t, filepath.Join(v0, "shard")); fmt.Sprint(got) != "[0 0.tar 1 1.tar]" {
		t.Fatalf("shard/: %v", got)
	}

	// Every sample exactly once across the shards; sizes exact; mtime, mode.
	seen := map[string]string{}
	inos := map[uint64]string{}
	size := (sample.Image{H: 2, W: 2, C: 1}).PNGSize()
	var counts []int
	for k := range 2 {
		sd := filepath.Join(v0, "shard", strconv.Itoa(k))
		n := 0
		err := filepath.WalkDir(sd, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			if prev, dup := inos[st.Ino]; dup {
				t.Errorf("inode %d shared by %s and %s", st.Ino, prev, p)
			}
			inos[st.Ino] = p
			if !fi.ModTime().Equal(t0) {
				t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), t0)
			}
			if d.IsDir() || d.Name() == "_samples.tsv" {
				return nil
			}
			n++
			if fi.Size() != size || fi.Mode().Perm() != 0o444 {
				t.Errorf("%s: size %d mode %v", p, fi.Size(), fi.Mode())
			}
			rel, _ := filepath.Rel(sd, p)
			class, name, _ := strings.Cut(rel, "/")
			id := strings.TrimSuffix(name, ".png")
			if prev, dup := seen[id]; dup {
				t.Errorf("sample %s in %s and %s", id, prev, p)
			}
			seen[id] = p
			i, _ := strconv.Atoi(id)
			if want := fmt.Sprintf("%02d", (i%100)%11); class != want {
				t.Errorf("%s: class %s, want %s", p, class, want)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if r, _, _, _ := img.At(0, 0).RGBA(); byte(r>>8) != byte(i%100) {
				t.Errorf("%s: pixel %d, want %d", p, r>>8, i%100)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
		// The sample list agrees with the tree.
		tsv, err := os.ReadFile(filepath.Join(sd, "_samples.tsv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(tsv), "\n"), "\n")
		if len(lines) != n {
			t.Errorf("shard %d: sample list has %d lines, tree %d samples", k, len(lines), n)
		}
		for _, l := range lines {
			f := strings.Split(l, "\t")
			if len(f) != 4 || f[1] != strconv.FormatInt(size, 10) || !strings.HasPrefix(f[0], f[2]+"/") || !strings.HasSuffix(f[0], "/"+f[3]+".png") {
				t.Errorf("sample list line %q", l)
			}
			if _, err := os.Stat(filepath.Join(sd, f[0])); err != nil {
				t.Errorf("sample list path: %v", err)
			}
		}
	}
	if len(seen) != 50 || counts[0]+counts[1] != 50 || counts[0]-counts[1] > 1 || counts[1]-counts[0] > 1 {
		t.Fatalf("%d distinct samples, shard counts %v", len(seen), counts)
	}

	// Writes fail with EROFS.
	some := seen["5"]
	if f, err := os.OpenFile(some, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("open for writing: %v", err)
		f.Close()
	}
	for name, err := range map[string]error{
		"create": func() error { _, err := os.Create(filepath.Join(v0, "new")); return err }(),
		"mkdir":  os.Mkdir(filepath.Join(v0, "dir"), 0o755),
		"remove": os.Remove(some),
		"rename": os.Rename(some, some+".x"),
		"chmod":  os.Chmod(some, 0o644),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}

	// at/<time>
	for _, tc := range []struct {
		name, want string
	}{
		{t0.Add(time.Minute).Format(time.RFC3339), "../version/0"},
		{strconv.FormatInt(t0.Add(2*time.Hour).UnixMilli(), 10), "../version/1"},
	} {
		if got, err := os.Readlink(filepath.Join(m.dir, "at", tc.name)); err != nil || got != tc.want {
			t.Errorf("at/%s -> %q, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(m.dir, "at", t0.Add(-time.Hour).Format(time.RFC3339))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("at/ before the first version: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "version", "7")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("version/7: %v", err)
	}
	stats, err := os.ReadFile(filepath.Join(m.dir, ".deltafs", "stats"))
	if err != nil || !strings.Contains(string(stats), `"samples"`) {
		t.Errorf("stats: %s %v", stats, err)
	}
}

func TestNewVersionsAppearAndOldOnesStay(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(10, 0)}}, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, 100*time.Millisecond)
	sd := filepath.Join(m.dir, "version", "0", "shard", "0")
	hash := func() string {
		h := sha256.New()
		for _, n := range testkit.DirNames(t, sd) {
			b, err := os.ReadFile(filepath.Join(sd, n))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%s %x\n", n, sha256.Sum256(b))
		}
		return fmt.Sprintf("%x", h.Sum(nil))
	}
	before := hash()
	for i := 1; i <= 20; i++ {
		tbl.Commit(t0.Add(time.Duration(i)*time.Minute), "WRITE", []sampletest.Add{{Path: fmt.Sprintf("n%02d", i), Rows: digits(3, 1000*i)}}, []string{"a"}[:i%2], nil)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		target, _ := os.Readlink(filepath.Join(m.dir, "latest"))
		if target == "version/20" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("latest -> %q after 10s, want version/20", target)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(testkit.DirNames(t, filepath.Join(m.dir, "version"))); n != 21 {
		t.Fatalf("%d versions listed, want 21", n)
	}
	if got := len(testkit.DirNames(t, filepath.Join(m.dir, "latest", "shard", "0"))); got != 1+3*20 && got != 1+3*20+10 {
		t.Fatalf("latest has %d entries", got)
	}
	if after := hash(); after != before {
		t.Fatal("version 0 changed while new versions were committed")
	}
}

func TestVacuumedFileFailsOnlyItsSamples(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(4, 0)}, {Path: "b", Rows: digits(4, 10)}}, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, time.Second)
	sd := filepath.Join(m.dir, "version", "0", "shard", "0")
	if _, err := os.ReadFile(filepath.Join(sd, "0.png")); err != nil {
		t.Fatal(err)
	}
	tbl.Vacuum("a") // after indexing: reads of a's unread samples fail
	tbl.Vacuum("b")
	if _, err := os.ReadFile(filepath.Join(sd, "0.png")); err != nil {
		t.Fatalf("an already cached sample: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(sd, "10.png")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a sample of a vacuumed file: %v, want EIO", err)
	}
}

// TestVacuumedBeforeIndexing: a shard whose data file is gone before it
// is first listed fails as a whole (EIO for its listing, its sample list and
// every name in it, readable or not): a loader never sees a smaller shard.
func TestVacuumedBeforeIndexing(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(4, 0)}, {Path: "b", Rows: digits(4, 10)}}, nil, nil)
	tbl.Vacuum("b")
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, time.Second)
	sd := filepath.Join(m.dir, "version", "0", "shard", "0")
	if _, err := os.ReadDir(sd); !errors.Is(err, syscall.EIO) {
		t.Fatalf("listing the shard: %v, want EIO", err)
	}
	for _, n := range []string{"0.png", "10.png", sample.ListName} {
		if _, err := os.ReadFile(filepath.Join(sd, n)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("%s: %v, want EIO", n, err)
		}
	}
}

// TestLargeDirectory lists a 60,000-sample shard and reads it twice: the
// second pass must be served by the kernel page cache (no sample reads).
func TestLargeDirectory(t *testing.T) {
	const n = 60000
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	var adds []sampletest.Add
	for f := range 6 {
		adds = append(adds, sampletest.Add{Path: fmt.Sprintf("part-%d", f), Rows: digits(n/6, f*n/6)})
	}
	tbl.Commit(t0, "WRITE", adds, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}, time.Second)
	sd := filepath.Join(m.dir, "version", "0", "shard", "0")
	start := time.Now()
	names := testkit.DirNames(t, sd)
	ls1 := time.Since(start)
	start = time.Now()
	names2 := testkit.DirNames(t, sd)
	ls2 := time.Since(start)
	if len(names) != n+1 || len(names2) != n+1 {
		t.Fatalf("listed %d then %d entries, want %d", len(names), len(names2), n+1)
	}
	sort.Strings(names)
	var reads atomic.Int64
	pass := func() time.Duration {
		start := time.Now()
		buf := make([]byte, 4096)
		for _, name := range names {
			f, err := os.Open(filepath.Join(sd, name))
			if err != nil {
				t.Fatal(err)
			}
			k, _ := f.Read(buf)
			reads.Add(int64(k))
			f.Close()
		}
		return time.Since(start)
	}
	p1 := pass()
	before := m.s.Counters().Reads.Load()
	p2 := pass()
	// Nearly all of the second pass is served by the page cache (a few
	// inodes may have been evicted by the kernel in between).
	if extra := m.s.Counters().Reads.Load() - before; extra > n/100 {
		t.Errorf("the second pass sent %d reads to the server; want about 0 (page cache)", extra)
	}
	t.Logf("60k samples: ls %v then %v; read pass 1 %v (%.0f files/s), pass 2 %v (%.0f files/s)",
		ls1, ls2, p1, float64(n)/p1.Seconds(), p2, float64(n)/p2.Seconds())
}

// TestConcurrentReaders has eight readers walk and read the same fresh
// version at once (shard indexes, file metadata and pages built under
// contention), like DataLoader workers; run with -race.
func TestConcurrentReaders(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	var adds []sampletest.Add
	for f := range 8 {
		adds = append(adds, sampletest.Add{Path: fmt.Sprintf("part-%d", f), Rows: digits(500, f*500)})
	}
	tbl.Commit(t0, "WRITE", adds, nil, nil)
	m := mount(t, tbl, sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label", Shards: 3}, time.Second)
	errs := make(chan error, 8)
	counts := make([]atomic.Int64, 3)
	for w := range 8 {
		go func() {
			k := w % 3
			sd := filepath.Join(m.dir, "version", "0", "shard", strconv.Itoa(k))
			n := int64(0)
			err := filepath.WalkDir(sd, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() == "_samples.tsv" {
					return err
				}
				if _, err := os.ReadFile(p); err != nil {
					return err
				}
				n++
				return nil
			})
			if w < 3 {
				counts[k].Store(n)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if total := counts[0].Load() + counts[1].Load() + counts[2].Load(); total != 4000 {
		t.Fatalf("shards hold %d samples, want 4000", total)
	}
}
