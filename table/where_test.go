package table

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/storage"
)

// touchStore records every data file (key outside _delta_log) any
// method of the store touches: opened, read or stat'ed.
type touchStore struct {
	storage.Storage
	mu      sync.Mutex
	touched map[string]int
}

// whereExpr parses a --where condition of a test ("": none, nil).
func whereExpr(text string) *filter.Expr {
	if text == "" {
		return nil
	}
	e, err := filter.Parse(text)
	if err != nil {
		panic(err)
	}
	return e
}

func (s *touchStore) touch(key string) {
	if strings.HasPrefix(key, "_delta_log/") {
		return
	}
	s.mu.Lock()
	if s.touched == nil {
		s.touched = map[string]int{}
	}
	s.touched[key]++
	s.mu.Unlock()
}

func (s *touchStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	s.touch(key)
	return s.Storage.Stat(ctx, key)
}

func (s *touchStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	s.touch(key)
	return s.Storage.ReadAt(ctx, key, p, off)
}

func (s *touchStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.touched {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const (
	whereParts, whereFiles, whereRows = 10, 2, 200
)

func writeSplitTable(t *testing.T, only int) string {
	t.Helper()
	dir := t.TempDir()
	if err := testkit.WritePartitioned(dir, testkit.Partitioned{Partitions: whereParts, FilesPer: whereFiles, RowsPer: whereRows, SampleBytes: 300, Only: only}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openWhere opens dir with a spec and a store that records what it
// touches.
func openWhere(t *testing.T, dir string, spec sample.Spec, cacheDir string) (*Table, *touchStore) {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := &touchStore{Storage: st}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tb, err := Open(ctx, Options{Location: dir, Store: ts, Spec: &spec, Cache: cache.Options{MemBytes: 64 << 20, Dir: cacheDir, SkipFsync: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb, ts
}

// readAll lists every shard of the latest version and reads every sample;
// it returns the samples' ids (sorted) and their bytes by id.
func readAll(t *testing.T, tb *Table) ([]int64, map[int64][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ver, err := tb.Samples.Version(ctx, tb.Latest.Version)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	data := map[int64][]byte{}
	for k := range ver.Shards() {
		sh, err := ver.Shard(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for pos := range sh.Len() {
			id, err := strconv.ParseInt(sh.ID(pos), 10, 64)
			if err != nil {
				t.Fatalf("sample id %q: %v", sh.ID(pos), err)
			}
			b, err := sh.Content(ctx, pos)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			data[id] = append([]byte(nil), b...)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, data
}

// TestWherePrunesPartitions: a filter on the partition column touches no
// data file of another partition (not even a Stat), serves the same
// samples, byte for byte, as the partition on its own, and reads no more
// data-file bytes than it does.
func TestWherePrunesPartitions(t *testing.T) {
	whole, alone := writeSplitTable(t, -1), writeSplitTable(t, 3)
	spec := sample.Spec{Where: whereExpr("split = 'p3'"), Shards: 2}
	tb, ts := openWhere(t, whole, spec, "")
	ids, data := readAll(t, tb)
	for _, k := range ts.keys() {
		if !strings.HasPrefix(k, "split=p3/") {
			t.Errorf("a data file of another partition was touched: %s", k)
		}
	}
	if len(ts.keys()) != whereFiles {
		t.Errorf("touched %v, want the %d files of p3", ts.keys(), whereFiles)
	}
	tbA, _ := openWhere(t, alone, sample.Spec{Shards: 2}, "")
	idsA, dataA := readAll(t, tbA)
	if len(ids) != whereFiles*whereRows || len(ids) != len(idsA) {
		t.Fatalf("%d samples with the filter, %d in the partition alone, want %d", len(ids), len(idsA), whereFiles*whereRows)
	}
	for i, id := range ids {
		if idsA[i] != id || !bytes.Equal(data[id], dataA[id]) {
			t.Fatalf("sample %d differs from the partition's own", id)
		}
	}
	got, base := tb.Counts().DataFileBytes, tbA.Counts().DataFileBytes
	t.Logf("data file bytes: %d with --where, %d for the partition alone (ratio %.3f)", got, base, float64(got)/float64(base))
	if float64(got) > 1.05*float64(base) {
		t.Errorf("read %d data-file bytes, the partition alone %d: more than 1.05 times", got, base)
	}
	ver, _ := tb.Samples.Version(context.Background(), tb.Latest.Version)
	var commit struct {
		Filter struct {
			Where                 string
			Pruned, Skipped, Read int
		} `json:"filter"`
	}
	raw := ver.CommitJSON()
	if err := json.Unmarshal(bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte(`"filesPruned"`), []byte(`"Pruned"`)), []byte(`"filesSkipped"`), []byte(`"Skipped"`)), []byte(`"filesRead"`), []byte(`"Read"`)), &commit); err != nil {
		t.Fatal(err)
	}
	if commit.Filter.Where != "split = 'p3'" || commit.Filter.Pruned != (whereParts-1)*whereFiles || commit.Filter.Skipped != 0 || commit.Filter.Read != whereFiles {
		t.Errorf("_commit.json filter: %+v\n%s", commit.Filter, raw)
	}
	if !strings.Contains(tb.Describe, `where="split = 'p3'" files_pruned=18 files_skipped=0 files_read=2`) {
		t.Errorf("the start line's spec does not say the filter: %s", tb.Describe)
	}
}

// TestWhereSkipsByStats: a filter the statistics exclude for every file
// opens no data file at all and serves no sample; one they exclude for
// some files opens only the others.
func TestWhereSkipsByStats(t *testing.T) {
	whole := writeSplitTable(t, -1)
	for _, where := range []string{"id > 1000000", "id < 0", "label > 9", "score < -1 OR lang IN ('xx', 'zz')", "NOT (id IS NOT NULL)", "lang = 'it'"} {
		tb, ts := openWhere(t, whole, sample.Spec{Where: whereExpr(where), Shards: 3}, "")
		ids, _ := readAll(t, tb)
		if len(ids) != 0 || len(ts.keys()) != 0 {
			t.Errorf("--where %q: %d samples, data files touched %v; want none", where, len(ids), ts.keys())
		}
		if n := tb.Counts().DataFileBytes; n != 0 {
			t.Errorf("--where %q: read %d data-file bytes", where, n)
		}
	}
	// ids 0..3999 lie 400 to a partition, 200 to a file: id < 500 holds
	// for files 0 and 1 (all rows) and file 2 (some rows).
	tb, ts := openWhere(t, whole, sample.Spec{Where: whereExpr("id < 500"), Shards: 2}, "")
	checkIDBelow500(t, tb, ts)
}

// TestWhereRowsAndLayouts: a row filter keeps exactly the matching rows,
// in either layout, with class folders; two filters on one disk cache
// share its pages.
func TestWhereRowsAndLayouts(t *testing.T) {
	whole := writeSplitTable(t, -1)
	cacheDir := t.TempDir()
	var first Counts
	for i, spec := range []sample.Spec{
		{Where: whereExpr("label IN (3, 7) AND split <> 'p0'"), Shards: 3, ClassColumn: "label"},
		{Where: whereExpr("label = 3 OR label = 7"), Shards: 2, Layout: sample.LayoutContiguous},
	} {
		tb, _ := openWhere(t, whole, spec, cacheDir)
		ids, _ := readAll(t, tb)
		want := 0
		for id := range whereParts * whereFiles * whereRows {
			if (id%10 == 3 || id%10 == 7) && (spec.Layout != "" || id >= whereFiles*whereRows) {
				want++
			}
		}
		if len(ids) != want {
			t.Errorf("%q: %d samples, want %d", spec.Where, len(ids), want)
		}
		for _, id := range ids {
			if id%10 != 3 && id%10 != 7 {
				t.Errorf("%q: sample %d does not match", spec.Where, id)
				break
			}
		}
		if i == 0 {
			first = tb.Counts()
		} else if n := tb.Counts().DataFileBytes; n*2 > first.DataFileBytes {
			// The second filter indexes its own rows (id and label
			// columns), but the pixels come from the cache the first
			// filled.
			t.Errorf("the second filter read %d data-file bytes, the first %d: pages were not shared", n, first.DataFileBytes)
		}
	}
}

// TestWhereTrustsStats: statistics that lie (a file whose statistics say
// no row can match, though rows do) are trusted, as Delta readers trust
// them: the file is not opened and its rows are not served. Documented.
func TestWhereTrustsStats(t *testing.T) {
	whole := writeSplitTable(t, -1)
	logFile := filepath.Join(whole, "_delta_log", "00000000000000000000.json")
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// File 0 of p0 holds ids 0..199; make its statistics say 5000..5199.
	lied := bytes.Replace(b, []byte(`\"minValues\":{\"id\":0,`), []byte(`\"minValues\":{\"id\":5000,`), 1)
	lied = bytes.Replace(lied, []byte(`\"maxValues\":{\"id\":199,`), []byte(`\"maxValues\":{\"id\":5199,`), 1)
	if bytes.Equal(lied, b) {
		t.Fatal("the statistics were not changed")
	}
	if err := os.WriteFile(logFile, lied, 0o644); err != nil {
		t.Fatal(err)
	}
	tb, ts := openWhere(t, whole, sample.Spec{Where: whereExpr("id < 10")}, "")
	ids, _ := readAll(t, tb)
	if len(ids) != 0 || len(ts.keys()) != 0 {
		t.Errorf("%d samples, touched %v: the statistics were not trusted", len(ids), ts.keys())
	}
}

// checkIDBelow500 checks a mount of the partitioned test table with
// --where "id < 500": ids 0..3999 lie 400 to a partition, 200 to a file,
// so it serves ids 0..499 and reads files 0 and 1 of partition 0 (all
// rows) and file 0 of partition 1 (some rows), no other.
func checkIDBelow500(t *testing.T, tb *Table, ts *touchStore) {
	t.Helper()
	ids, _ := readAll(t, tb)
	if len(ids) != 500 || ids[0] != 0 || ids[499] != 499 {
		t.Errorf("id < 500: %d samples (%v...)", len(ids), ids[:min(3, len(ids))])
	}
	want := []string{testkit.PartitionFile(0, 0), testkit.PartitionFile(0, 1), testkit.PartitionFile(1, 0)}
	if got := ts.keys(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("id < 500 touched %v, want %v", got, want)
	}
}

// rewriteLog replaces old with new in version 0's commit of dir, once.
func rewriteLog(t *testing.T, dir string, pairs ...string) {
	t.Helper()
	logFile := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(pairs); i += 2 {
		nb := bytes.Replace(b, []byte(pairs[i]), []byte(pairs[i+1]), 1)
		if bytes.Equal(nb, b) {
			t.Fatalf("%s is not in the log", pairs[i])
		}
		b = nb
	}
	if err := os.WriteFile(logFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWhereStatsThatAdmitAll: statistics that say every row of a file
// matches (file 0 of p0 holds ids 0..199, its statistics say
// 5000..5199) admit none of its rows that do not: rows are evaluated.
func TestWhereStatsThatAdmitAll(t *testing.T) {
	whole := writeSplitTable(t, -1)
	rewriteLog(t, whole, `\"minValues\":{\"id\":0,`, `\"minValues\":{\"id\":5000,`,
		`\"maxValues\":{\"id\":199,`, `\"maxValues\":{\"id\":5199,`)
	tb, _ := openWhere(t, whole, sample.Spec{Where: whereExpr("id >= 5000 OR id = 7")}, "")
	ids, _ := readAll(t, tb)
	if len(ids) != 1 || ids[0] != 7 {
		t.Errorf("served ids %v, want [7]: rows the statistics admitted were not evaluated", ids[:min(5, len(ids))])
	}
}

// TestWhereZeroCountFails: a file claiming 0 rows that holds 200 fails
// its shard under --where, as it does without one; it is not skipped.
func TestWhereZeroCountFails(t *testing.T) {
	for _, where := range []string{"", "id >= 0"} {
		whole := writeSplitTable(t, -1)
		rewriteLog(t, whole, `\"numRecords\":200}`, `\"numRecords\":0}`)
		tb, _ := openWhere(t, whole, sample.Spec{Where: whereExpr(where)}, "")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ver, err := tb.Samples.Version(ctx, tb.Latest.Version)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		var failed error
		for k := range ver.Shards() {
			sh, err := ver.Shard(ctx, k)
			if err == nil {
				for pos := range sh.Len() {
					if _, err = sh.Content(ctx, pos); err != nil {
						break
					}
				}
			}
			if err != nil {
				failed = err
			}
		}
		cancel()
		if failed == nil || !strings.Contains(failed.Error(), "its statistics in the log say 0") {
			t.Errorf("--where %q: a file claiming 0 rows of 200 served without error (%v)", where, failed)
		}
	}
}
