package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// deltaTable writes Delta tables by hand (parquet-go data files, JSON
// commits put if absent), independent of the writer package.
type deltaTable struct {
	t    *testing.T
	dir  string
	st   *storage.Local
	next int64
}

const digitSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"label","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"pixels","type":"binary","nullable":true,"metadata":{}}]}`

func newDeltaTable(t *testing.T, dir string) *deltaTable {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &deltaTable{t: t, dir: dir, st: st}
}

// commit writes one version adding one data file per chunk (and removing
// paths), returning the version and the added paths.
func (d *deltaTable) commit(ts time.Time, schema string, chunks [][]testkit.Digit, remove ...string) (int64, []string) {
	t := d.t
	var lines []any
	lines = append(lines, map[string]any{"commitInfo": map[string]any{"timestamp": ts.UnixMilli(), "operation": "WRITE", "engineInfo": "cmd_mount_test"}})
	if d.next == 0 {
		lines = append(lines,
			map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}},
			map[string]any{"metaData": map[string]any{"id": "9b0c6d1e-0000-4000-8000-000000000001", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
				"schemaString": schema, "partitionColumns": []string{}, "configuration": map[string]any{}, "createdTime": ts.UnixMilli()}})
	}
	for _, r := range remove {
		lines = append(lines, map[string]any{"remove": map[string]any{"path": r, "deletionTimestamp": ts.UnixMilli(), "dataChange": true}})
	}
	var paths []string
	for i, rows := range chunks {
		name := fmt.Sprintf("part-%05d-v%d.snappy.parquet", i, d.next)
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[testkit.Digit](&buf, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(64<<10))
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		lo, hi := rows[0].Label, rows[0].Label
		for _, r := range rows {
			lo, hi = min(lo, r.Label), max(hi, r.Label)
		}
		stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"label":%d},"maxValues":{"label":%d},"nullCount":{"label":0}}`, len(rows), lo, hi)
		lines = append(lines, map[string]any{"add": map[string]any{"path": name, "partitionValues": map[string]any{}, "size": buf.Len(),
			"modificationTime": ts.UnixMilli(), "dataChange": true, "stats": stats}})
		paths = append(paths, name)
	}
	var b []byte
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b = append(append(b, j...), '\n')
	}
	key := fmt.Sprintf("_delta_log/%020d.json", d.next)
	if err := d.st.Put(context.Background(), key, b, true); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(filepath.Join(d.dir, key), ts, ts)
	d.next++
	return d.next - 1, paths
}

func chunk(rows []testkit.Digit, n int) [][]testkit.Digit {
	var out [][]testkit.Digit
	for len(rows) > 0 {
		k := min(n, len(rows))
		out = append(out, rows[:k])
		rows = rows[k:]
	}
	return out
}

// samplesUnder lists the sample files under a shard directory (relative
// paths, not the sample list).
func samplesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != "_samples.tsv" && d.Name() != "_extents.tsv" {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMountMNIST(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	ts := time.Date(2026, 10, 1, 8, 30, 0, 0, time.UTC)
	table.commit(ts, digitSchema, chunk(digits, 2500))
	m := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--class-column", "label", "--cache-dir", "none")
	sd := filepath.Join(m.Dir, "latest", "shard", "0")
	wantSpec := `spec="id=id data=pixels (raw 28x28x1 pixels as png, 880 bytes each) class=label shards=1 layout=balanced"`
	waitLog(t, m, 10*time.Second, "INFO", wantSpec) // the log comes through a pipe

	ents, err := os.ReadDir(sd)
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	for _, e := range ents {
		if e.IsDir() {
			classes = append(classes, e.Name())
		}
	}
	if fmt.Sprint(classes) != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("class folders %v", classes)
	}
	byID := map[int64]testkit.Digit{}
	for _, d := range digits {
		byID[d.ID] = d
	}
	size := (sample.Image{H: 28, W: 28, C: 1}).PNGSize()
	for c, want := range testkit.MNISTPerClass {
		files, err := os.ReadDir(filepath.Join(sd, strconv.Itoa(c)))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != want {
			t.Errorf("class %d: %d files, want %d", c, len(files), want)
		}
		for i, f := range files {
			fi, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != size || fi.Mode().Perm() != 0o444 || !fi.ModTime().Equal(ts) {
				t.Fatalf("%s: size %d mode %v mtime %v", f.Name(), fi.Size(), fi.Mode(), fi.ModTime())
			}
			if i%97 != 0 {
				continue
			}
			id, _ := strconv.ParseInt(strings.TrimSuffix(f.Name(), ".png"), 10, 64)
			data, err := os.ReadFile(filepath.Join(sd, strconv.Itoa(c), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			g, ok := img.(*image.Gray)
			if !ok || !bytes.Equal(g.Pix, byID[id].Pixels) || int(byID[id].Label) != c {
				t.Fatalf("%d/%s: decoded image differs from source digit %d", c, f.Name(), id)
			}
		}
	}
	// The sample list agrees with the tree.
	tsv, err := os.ReadFile(filepath.Join(sd, "_samples.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(tsv), "\n"), "\n")
	tree := samplesUnder(t, sd)
	if len(lines) != 10000 || len(tree) != 10000 {
		t.Fatalf("sample list %d lines, tree %d samples", len(lines), len(tree))
	}
	sort.Strings(tree)
	var fromTSV []string
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 4 || f[1] != strconv.FormatInt(size, 10) || f[0] != f[2]+"/"+f[3]+".png" {
			t.Fatalf("sample list line %q", l)
		}
		fromTSV = append(fromTSV, f[0])
	}
	sort.Strings(fromTSV)
	if fmt.Sprint(fromTSV) != fmt.Sprint(tree) {
		t.Fatal("sample list paths differ from the tree")
	}
	// Writes fail with EROFS.
	some := filepath.Join(sd, "7", "60000.png")
	if _, err := os.OpenFile(some, os.O_RDWR, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("open for writing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(sd, "new.png"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create: %v", err)
	}
	if err := os.Remove(some); !errors.Is(err, syscall.EROFS) {
		t.Errorf("remove: %v", err)
	}
	for _, at := range []string{ts.Add(time.Second).Format(time.RFC3339), strconv.FormatInt(ts.UnixMilli(), 10)} {
		if target, err := os.Readlink(filepath.Join(m.Dir, "at", at)); err != nil || target != "../version/0" {
			t.Errorf("at/%s -> %q, %v", at, target, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(m.Dir, "at", ts.Add(-time.Hour).Format(time.RFC3339))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("at/ an hour before the first commit: %v", err)
	}
	commit, err := os.ReadFile(filepath.Join(m.Dir, "version", "0", "_commit.json"))
	if err != nil || !strings.Contains(string(commit), `"rows": 10000`) {
		t.Errorf("_commit.json: %s %v", commit, err)
	}
	// 10,000 listed, 1 in 97 per class read (plus the sample list): the
	// counters say so. The sample layer's reads are the FUSE READs and
	// the samples the prefill read after the listings (pushed, or missed
	// when the kernel had already forgotten their inodes).
	st := readStats(t, m.Dir)
	if st.Index.Samples != 10000 || st.Reads.Samples == 0 || st.Reads.Errors != 0 || st.Prefill.Files == 0 ||
		st.Reads.Latency.Count+uint64(st.Prefill.Files+st.Prefill.Missed) < uint64(st.Reads.Samples) {
		t.Errorf(".deltafs/stats: index %+v, reads %+v, prefill %+v", st.Index, st.Reads, st.Prefill)
	}
	if st.Storage.DataFileBytesRead == 0 || st.Storage.PagesDecoded == 0 || st.Cache.MemMisses == 0 || st.Cache.MemHits == 0 {
		t.Errorf(".deltafs/stats: storage %+v, cache memory hits %d misses %d", st.Storage, st.Cache.MemHits, st.Cache.MemMisses)
	}
	if err := m.Stop(); err != nil {
		t.Errorf("deltafs mount exited with %v after SIGINT", err)
	}
	if mounttest.Mounted(m.Dir) {
		t.Error("still mounted after SIGINT")
	}
}

func TestMountShards(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	table.commit(time.Now(), digitSchema, chunk(digits, 1000))
	m := mounttest.Start(t, bin, table.dir, "--image", "28x28", "--shards", "3", "--cache-dir", "none")
	seen := map[string]int{}
	var sizes []int
	for k := range 3 {
		got := samplesUnder(t, filepath.Join(m.Dir, "version", "0", "shard", strconv.Itoa(k)))
		sizes = append(sizes, len(got))
		for _, p := range got {
			seen[p]++
		}
	}
	sort.Ints(sizes)
	if len(seen) != 10000 || sizes[2]-sizes[0] > 1 || sizes[0]+sizes[1]+sizes[2] != 10000 {
		t.Fatalf("shards %v hold %d distinct samples", sizes, len(seen))
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("%s is in %d shards", p, n)
		}
	}
}

// TestMountSnapshotIsolation reads version 0 of a mounted table over and
// over while another process (`deltafs import`, the writer package)
// commits 20 new versions, one of them an overwrite: version 0's files stay
// byte-identical, and the new versions and latest appear without a
// remount.
func TestMountSnapshotIsolation(t *testing.T) {
	bin := mounttest.Binary(t)
	digits := testkit.MNIST(t, testkit.MNISTTest)
	src := t.TempDir()
	table := filepath.Join(t.TempDir(), "grow")
	if err := os.WriteFile(filepath.Join(src, "base.npy"), testkit.MNISTNPY(digits[:1000]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := mounttest.Run(bin, "import", filepath.Join(src, "base.npy"), table, "--rows-per-file", "500"); err != nil {
		t.Fatalf("deltafs import: %v\n%s", err, out)
	}
	m := mounttest.Start(t, bin, table, "--image", "28x28", "--class-column", "label", "--refresh", "200ms", "--cache-dir", "none")
	hashAt := func(v0 string) (string, int) {
		h := sha256.New()
		files := samplesUnder(t, v0)
		sort.Strings(files)
		for _, p := range files {
			b, err := os.ReadFile(filepath.Join(v0, p))
			if err != nil {
				t.Error(err)
				return "", 0
			}
			fmt.Fprintf(h, "%s %x\n", p, sha256.Sum256(b))
		}
		return fmt.Sprintf("%x", h.Sum(nil)), len(files)
	}
	hash := func() (string, int) { return hashAt(filepath.Join(m.Dir, "version", "0", "shard", "0")) }
	before, n := hash()
	if n != 1000 {
		t.Fatalf("version 0 has %d samples, want 1000", n)
	}
	writerDone := make(chan error, 1)
	var reads atomic.Int32 // full read passes over version 0 during the commits
	// waitReads holds the writer until the reader has made n passes, so
	// that reads and commits interleave however fast either is.
	waitReads := func(n int32) error {
		for deadline := time.Now().Add(60 * time.Second); reads.Load() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the reader made %d passes in 60s, want %d", reads.Load(), n)
			}
		}
		return nil
	}
	go func() { // the writer: 20 commits by another process
		for i := 1; i <= 20; i++ {
			if i == 10 || i == 20 {
				if err := waitReads(int32(i / 10)); err != nil {
					writerDone <- err
					return
				}
			}
			part := filepath.Join(src, fmt.Sprintf("part-%02d.npy", i))
			if err := os.WriteFile(part, testkit.MNISTNPY(digits[1000+50*i:1050+50*i]), 0o644); err != nil {
				writerDone <- err
				return
			}
			mode := "append"
			if i == 10 {
				mode = "overwrite"
			}
			if out, err := mounttest.Run(bin, "import", part, table, "--mode", mode); err != nil {
				writerDone <- fmt.Errorf("import %d: %v\n%s", i, err, out)
				return
			}
		}
		writerDone <- nil
	}()
	for done := false; !done; {
		select {
		case err := <-writerDone:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
			if h, _ := hash(); h != before {
				t.Fatal("version 0 changed while the writer committed")
			}
			reads.Add(1)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if target, _ := os.Readlink(filepath.Join(m.Dir, "latest")); target == "version/20" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("latest did not move to version/20 within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after, _ := hash(); after != before {
		t.Fatal("version 0 changed")
	}
	// version/ lists numerically, oldest first, in the order the kernel
	// returns the entries (Readdirnames does not sort, unlike os.ReadDir).
	vd, err := os.Open(filepath.Join(m.Dir, "version"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := vd.Readdirnames(-1)
	vd.Close()
	var wantList []string
	for i := 0; i <= 20; i++ {
		wantList = append(wantList, strconv.Itoa(i))
	}
	if err != nil || strings.Join(listed, " ") != strings.Join(wantList, " ") {
		t.Fatalf("version/ lists %v (%v), want %v", listed, err, wantList)
	}
	if n := len(samplesUnder(t, filepath.Join(m.Dir, "latest", "shard", "0"))); n != 11*50 {
		t.Fatalf("latest has %d samples, want %d (overwrite at version 10, then 10 appends)", n, 11*50)
	}
	if n := len(samplesUnder(t, filepath.Join(m.Dir, "version", "9", "shard", "0"))); n != 1000+9*50 {
		t.Fatalf("version 9 has %d samples, want %d", n, 1000+9*50)
	}
	if reads.Load() < 2 {
		t.Fatalf("version 0 read in full %d times during the commits, want at least 2", reads.Load())
	}
	// The passes above may have been served from the kernel's page cache:
	// a fresh mount (new inodes, no cached pages, a new process) reads the
	// data files again, and must give the same bytes.
	fresh := mounttest.Start(t, bin, table, "--image", "28x28", "--class-column", "label", "--cache-dir", "none")
	if h, n := hashAt(filepath.Join(fresh.Dir, "version", "0", "shard", "0")); h != before || n != 1000 {
		t.Fatalf("version 0 through a fresh mount: %d samples, hash differs: %v", n, h != before)
	}
	stats, err := os.ReadFile(filepath.Join(fresh.Dir, ".deltafs", "stats"))
	if err != nil || !regexp.MustCompile(`data_bytes_read\W+[1-9]`).Match(stats) {
		t.Errorf("the fresh mount read no data file bytes: %s %v", stats, err)
	}
	t.Logf("version 0 read %d times in full while 20 versions were committed", reads.Load())
}

func TestMountIDs(t *testing.T) {
	bin := mounttest.Binary(t)
	type row struct {
		ID   string `parquet:"id"`
		Data []byte `parquet:"data"`
	}
	dir := filepath.Join(t.TempDir(), "ids")
	newDeltaTable(t, dir)
	rows := []row{{"a/b", []byte("x")}, {"..", []byte("x")}, {"7", []byte("\x89PNG\r\n\x1a\n..")}, {"7", []byte("y")}, {"", []byte("x")}, {".x", []byte("x")}, {"100%", []byte("x")}}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"string","nullable":true,"metadata":{}},{"name":"data","type":"binary","nullable":true,"metadata":{}}]}`
	commit := fmt.Sprintf(`{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{}}}
{"add":{"path":"part-0.parquet","partitionValues":{},"size":%d,"modificationTime":1700000000000,"dataChange":true,"stats":"{\"numRecords\":7}"}}
`, schema, buf.Len())
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mounttest.Start(t, bin, dir, "--cache-dir", "none")
	got := samplesUnder(t, filepath.Join(m.Dir, "latest", "shard", "0"))
	sort.Strings(got)
	want := []string{"%.bin", "%2E..bin", "%2Ex.bin", "100%25.bin", "7.png", "7~1.bin", "a%2Fb.bin"}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(m.Dir, "latest", "shard", "0", "7~1.bin")); err != nil || string(b) != "y" {
		t.Fatalf("duplicate id sample: %q %v", b, err)
	}
	waitLog(t, m, 10*time.Second, "WARN", "share ids")
}

// TestMountRefuses checks that a mount that cannot work fails before
// mounting, with one clear line and exit status 1.
func TestMountRefuses(t *testing.T) {
	bin := mounttest.Binary(t)
	notDelta := t.TempDir()
	_ = os.WriteFile(filepath.Join(notDelta, "data.csv"), []byte("a,b\n"), 0o644)
	for _, tc := range []struct {
		name, table string
		flags       []string
		want        []string // substrings of the error line (any of)
	}{
		{"missing table", filepath.Join(t.TempDir(), "nope"), nil, []string{"does not exist"}},
		{"not a Delta table", notDelta, nil, []string{"not a Delta table"}},
		{"reader version 99", "../../testdata/delta/golden-deltalog-invalid-protocol-version", nil, []string{"protocol", "reader", "99"}},
		{"unknown reader feature", "../../testdata/delta/deltars-simple_table_features", nil, []string{"feature", "protocol"}},
		{"variant type", "../../testdata/delta/deltars-spark-variant-checkpoint", nil, []string{"variantType-preview"}},
		{"no such class column", "../../testdata/delta/dat-basic_append", []string{"--class-column", "nope"}, []string{"nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, append([]string{"mount", tc.table, dir}, tc.flags...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				mounttest.Unmount(dir)
				t.Fatal("the mount did not fail")
			}
			if mounttest.Mounted(dir) {
				mounttest.Unmount(dir)
				t.Fatal("left mounted")
			}
			var ee *exec.ExitError
			msg := strings.TrimSpace(stderr.String())
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "deltafs: ") {
				t.Fatalf("exit %v, stderr %q: want status 1 and one line", err, msg)
			}
			for _, w := range tc.want {
				if strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
					return
				}
			}
			t.Fatalf("%q names none of %q", msg, tc.want)
		})
	}
}

// refusedMount runs a `deltafs mount` that must be refused at once. Should
// it mount after all (a regression), it is killed after 30 s rather than
// hanging the test, and whatever it mounted on dir is unmounted (also on top
// of an existing mount: cleanups run last-in first-out).
func refusedMount(t *testing.T, bin, table, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() {
		if ctx.Err() != nil {
			mounttest.Unmount(dir)
		}
	})
	out, err := exec.CommandContext(ctx, bin, "mount", table, dir).CombinedOutput()
	if ctx.Err() != nil {
		mounttest.Unmount(dir)
		t.Fatalf("deltafs mount %s on %s was not refused within 30s:\n%s", table, dir, out)
	}
	return string(out), err
}

func TestMountBusyAndStaleMountpoint(t *testing.T) {
	bin := mounttest.Binary(t)
	table := "../../testdata/delta/dat-basic_append"

	// Busy: something is already mounted there.
	busy := t.TempDir()
	if err := syscall.Mount("tmpfs", busy, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs (the tests run as root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(busy, syscall.MNT_DETACH) })
	out, err := refusedMount(t, bin, table, busy)
	if err == nil || !strings.Contains(out, "busy") || !strings.Contains(out, "already mounted") {
		t.Fatalf("mount on a busy mount point: %v %q", err, out)
	}

	// Stale: the server of a mount died, also with its overlays stacked
	// (the default), which `deltafs unmount` clears with it. The mount
	// point stat'ed while the server lived: its attributes must not
	// answer for a dead server.
	for _, flags := range [][]string{{"--overlay=false"}, nil} {
		m := mounttest.Start(t, bin, table, append([]string{"--cache-dir", "none"}, flags...)...)
		if _, err := os.Stat(filepath.Join(m.Dir, "latest", "_commit.json")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(m.Dir); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the kernel keeps them a jiffy or two
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(m.Dir); !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("%v: after killing the server: stat %v, want ENOTCONN", flags, err)
		}
		out, err = refusedMount(t, bin, table, m.Dir)
		if err == nil || !strings.Contains(out, "not connected") || !strings.Contains(out, "deltafs unmount") {
			t.Fatalf("%v: mount on a stale mount point: %v %q", flags, err, out)
		}
		if out, err := mounttest.Run(bin, "unmount", m.Dir); err != nil {
			t.Fatalf("%v: deltafs unmount of a stale mount: %v %s", flags, err, out)
		}
		if mounttest.Mounted(m.Dir) || mounttest.Mounted(filepath.Join(m.Dir, "version", "2")) {
			t.Fatalf("%v: still mounted after deltafs unmount", flags)
		}
		if out, err := mounttest.Run(bin, "unmount", m.Dir); err == nil {
			t.Fatalf("%v: unmounting a directory that is not mounted succeeded: %s", flags, out)
		}
	}
}

// expected is testdata/delta/EXPECTED.json, the part the tests use.
type expected map[string]struct {
	Versions map[string]struct {
		Rows    *int64 `json:"rows"`
		Missing int    `json:"missing_data_files"`
	} `json:"versions"`
	Unreconstructable []any `json:"unreconstructable_versions"`
}

// mustRefuse are the tables a reader must refuse (TestMountRefuses): an
// unknown protocol version, an unknown reader feature, and the variant type
// (which deltafs does not decode). Every other table, type widening
// included, must mount and match its rows.
var mustRefuse = map[string]bool{
	"golden-deltalog-invalid-protocol-version": true,
	"deltars-simple_table_features":            true,
	"deltars-spark-variant-checkpoint":         true,
}

// TestMountDeltaTables mounts every real table as JSON samples over two
// shards and checks, for every version, that the sample files are the
// version's live rows: as many as EXPECTED.json says, and equal as a
// multiset to the rows package scan decodes, rendered by AppendJSON (what
// `deltafs cat` prints).
func TestMountDeltaTables(t *testing.T) {
	bin := mounttest.Binary(t)
	var exp expected
	testkit.Expected(t, &exp)
	names := make([]string, 0, len(exp))
	for n := range exp {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if mustRefuse[name] {
			continue // TestMountRefuses
		}
		t.Run(name, func(t *testing.T) {
			table := testkit.CopyTable(t, name)
			mnt := mounttest.Mountpoint(t)
			m, err := mounttest.StartAt(bin, table, mnt, "--data-column", "-", "--shards", "2", "--cache-dir", "none")
			if m != nil {
				t.Cleanup(func() { _ = m.Stop(); mounttest.Unmount(mnt) })
			}
			if err != nil {
				t.Fatal(err)
			}
			unrec := map[string]bool{}
			for _, v := range exp[name].Unreconstructable {
				unrec[fmt.Sprint(v)] = true
			}
			checked := 0
			for vs, want := range exp[name].Versions {
				if want.Rows == nil || want.Missing > 0 {
					continue
				}
				vdir := filepath.Join(mnt, "version", vs)
				if _, err := os.Stat(vdir); err != nil {
					if errors.Is(err, os.ErrNotExist) && unrec[vs] {
						continue // not readable (log cleaned up before a checkpoint)
					}
					t.Errorf("version %s: %v (EXPECTED.json does not list it as unreconstructable)", vs, err)
					continue
				}
				var got []string
				for k := range 2 {
					sd := filepath.Join(vdir, "shard", strconv.Itoa(k))
					for _, p := range samplesUnder(t, sd) {
						b, err := os.ReadFile(filepath.Join(sd, p))
						if err != nil {
							t.Fatalf("version %s: %s: %v", vs, p, err)
						}
						got = append(got, strings.TrimSuffix(string(b), "\n"))
					}
				}
				if int64(len(got)) != *want.Rows {
					t.Errorf("version %s: %d sample files, want %d live rows", vs, len(got), *want.Rows)
					continue
				}
				checked++
				rows := scanRows(t, table, vs)
				sort.Strings(rows)
				sort.Strings(got)
				if fmt.Sprint(rows) != fmt.Sprint(got) {
					t.Errorf("version %s: sample files differ from the scanned rows\nfiles: %q\nrows:  %q", vs, got, rows)
				}
			}
			if checked == 0 {
				t.Fatal("no version checked")
			}
		})
	}
}

// scanRows decodes the live rows of a version with package scan, each
// rendered by AppendJSON.
func scanRows(t *testing.T, table, version string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := storage.NewLocal(table)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := snapshot.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.ParseInt(version, 10, 64)
	snap, err := tbl.Snapshot(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scan.New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	err = sc.All(ctx, func(_ *snapshot.AddFile, _ int64, row []any) error {
		rows = append(rows, string(sc.AppendJSON(nil, row)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestMountStops checks the two ways a live mount ends besides Ctrl-C:
// SIGTERM (what systemd and `docker stop` send), and `deltafs unmount
// MOUNTPOINT` from another process. Either way the mount point is released,
// the server exits with status 0 and says so in its log.
func TestMountStops(t *testing.T) {
	bin := mounttest.Binary(t)
	table := "../../testdata/delta/dat-basic_append"
	live := func(m *mounttest.Mount) {
		t.Helper()
		if !mounttest.Mounted(m.Dir) {
			t.Fatalf("%s is not mounted", m.Dir)
		}
		if ents, err := os.ReadDir(filepath.Join(m.Dir, "latest", "shard", "0")); err != nil || len(ents) == 0 {
			t.Fatalf("mount not serving: %d entries, %v", len(ents), err)
		}
	}
	t.Run("SIGTERM", func(t *testing.T) {
		m := mounttest.Start(t, bin, table, "--cache-dir", "none")
		live(m)
		if err := m.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		exited, err := m.Wait(20 * time.Second)
		if !exited || err != nil {
			t.Fatalf("after SIGTERM: exited %v, err %v; want exit status 0", exited, err)
		}
		if mounttest.Mounted(m.Dir) {
			t.Fatal("still mounted after SIGTERM")
		}
		if !strings.Contains(m.Log(), "msg=unmounting") {
			t.Errorf("no unmounting line in the log:\n%s", m.Log())
		}
	})
	t.Run("deltafs unmount", func(t *testing.T) {
		m := mounttest.Start(t, bin, table, "--cache-dir", "none")
		live(m)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, bin, "unmount", m.Dir).CombinedOutput(); err != nil {
			t.Fatalf("deltafs unmount of a live mount: %v %s", err, out)
		}
		if mounttest.Mounted(m.Dir) {
			t.Fatal("still mounted after deltafs unmount")
		}
		exited, err := m.Wait(20 * time.Second)
		if !exited || err != nil {
			t.Fatalf("the mount process after deltafs unmount: exited %v, err %v; want exit status 0", exited, err)
		}
		if !strings.Contains(m.Log(), "unmounted from outside") {
			t.Errorf("no 'unmounted from outside' line in the log:\n%s", m.Log())
		}
	})
}
