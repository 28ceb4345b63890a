package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Benchmarks on a large generated log: 100,000 commits, each adding one
// data file and (after the first liveWindow versions) removing the file
// added liveWindow versions before, so that 10,000 files are live; a
// classic Parquet checkpoint (written with parquet-go) every ckptEvery
// versions and _last_checkpoint pointing at the newest.

const (
	benchCommits   = 100_000
	benchCkptEvery = 1_000
	benchWindow    = 10_000
)

// largeLog describes a generated log.
type largeLog struct {
	dir             string
	commits, window int64
}

// liveAt is the number of live files (and rows: file v has v%100+1 rows)
// at version v.
func (l largeLog) liveAt(v int64) (files int, rows int64) {
	lo := max(int64(1), v-l.window+1)
	for u := lo; u <= v; u++ {
		rows += u%100 + 1
	}
	return int(v - lo + 1), rows
}

func genLargeLog(tb testing.TB, dir string, commits, ckptEvery, window int64) largeLog {
	tb.Helper()
	logd := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logd, 0o755); err != nil {
		tb.Fatal(err)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, data []byte, v int64) {
		p := filepath.Join(logd, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		ts := base.Add(time.Duration(v) * time.Second)
		os.Chtimes(p, ts, ts)
	}
	live := map[int64]*ckptAdd{}
	var buf bytes.Buffer
	for v := int64(0); v <= commits; v++ {
		buf.Reset()
		fmt.Fprintf(&buf, `{"commitInfo":{"timestamp":%d,"operation":"WRITE","engineInfo":"bench"}}`+"\n", base.Add(time.Duration(v)*time.Second).UnixMilli())
		if v == 0 {
			buf.WriteString(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n")
			buf.WriteString(mustJSON(metadataAction(nil)) + "\n")
		} else {
			n := v%100 + 1
			a := &ckptAdd{Path: fmt.Sprintf("part=p%d/f-%08d.parquet", v%10, v), Size: 1000 + v, ModificationTime: v,
				DataChange: true, PartitionValues: map[string]string{"part": fmt.Sprintf("p%d", v%10)},
				Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, n, v*100, v*100+n-1)}
			live[v] = a
			fmt.Fprintf(&buf, `{"add":{"path":%q,"partitionValues":{"part":%q},"size":%d,"modificationTime":%d,"dataChange":true,"stats":%q}}`+"\n",
				a.Path, a.PartitionValues["part"], a.Size, a.ModificationTime, a.Stats)
			if old, ok := live[v-window]; ok {
				fmt.Fprintf(&buf, `{"remove":{"path":%q,"deletionTimestamp":%d,"dataChange":true}}`+"\n", old.Path, v)
				delete(live, v-window)
			}
		}
		write(fmt.Sprintf("%020d.json", v), buf.Bytes(), v)
		if v > 0 && v%ckptEvery == 0 {
			rows := []ckptRow{
				{Protocol: &ckptProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
				{MetaData: &ckptMetadata{ID: "fake-id", Format: ckptFormat{Provider: "parquet"}, SchemaString: fakeSchema, PartitionColumns: []string{"part"}}},
			}
			for u := max(1, v-window+1); u <= v; u++ {
				rows = append(rows, ckptRow{Add: live[u]})
			}
			var pb bytes.Buffer
			w := parquet.NewGenericWriter[ckptRow](&pb, parquet.Compression(&parquet.Snappy))
			if _, err := w.Write(rows); err != nil {
				tb.Fatal(err)
			}
			if err := w.Close(); err != nil {
				tb.Fatal(err)
			}
			write(fmt.Sprintf("%020d.checkpoint.parquet", v), pb.Bytes(), v)
			write("_last_checkpoint", []byte(fmt.Sprintf(`{"version":%d,"size":%d}`, v, len(rows))), v)
		}
	}
	return largeLog{dir: dir, commits: commits, window: window}
}

func checkLarge(tb testing.TB, l largeLog, s *Snapshot) {
	files, rows := l.liveAt(s.Version)
	if len(s.Files) != files || s.NumRows() != rows {
		tb.Fatalf("version %d: %d files, %d rows; want %d, %d", s.Version, len(s.Files), s.NumRows(), files, rows)
	}
}

// The generator and the reader agree on a smaller log, at random versions.
func TestLargeLogGenerated(t *testing.T) {
	l := genLargeLog(t, t.TempDir(), 3000, 100, 400)
	tbl := mustOpen(t, openLocal(t, l.dir))
	checkLarge(t, l, mustSnapshot(t, tbl, -1))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		checkLarge(t, l, mustSnapshot(t, tbl, r.Int64N(3001)))
	}
	vs, err := tbl.Versions(context.Background())
	if err != nil || len(vs) != 3001 {
		t.Fatalf("Versions: %d, %v", len(vs), err)
	}
}

var benchLog struct {
	l    largeLog
	done bool
}

// largeLogOnce generates the benchmark log once per process, in a
// directory removed when the process's benchmarks end.
func largeLogOnce(b *testing.B) largeLog {
	b.Helper()
	if !benchLog.done {
		dir, err := os.MkdirTemp("", "deltafs-snapshot-bench-")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		benchLog.l = genLargeLog(b, dir, benchCommits, benchCkptEvery, benchWindow)
		benchLog.done = true
		b.Logf("generated %d commits, %d checkpoints in %v", benchCommits, benchCommits/benchCkptEvery, time.Since(start))
	}
	return benchLog.l
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLog.done {
		os.RemoveAll(benchLog.l.dir)
	}
	os.Exit(code)
}

// Open (read _last_checkpoint, list from it, read the newest checkpoint,
// replay the commits after it) and the latest snapshot, from scratch.
func BenchmarkSnapshotOpenLatest(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		tbl, err := Open(ctx, openLocal(b, l.dir))
		if err != nil {
			b.Fatal(err)
		}
		s, err := tbl.Snapshot(ctx, -1)
		if err != nil {
			b.Fatal(err)
		}
		if s.Version != l.commits {
			b.Fatalf("latest %d", s.Version)
		}
	}
	tbl, _ := Open(ctx, openLocal(b, l.dir))
	checkLarge(b, l, mustSnapshot(b, tbl, -1))
}

// A random version of an opened table: the checkpoint at or before it
// (cached after first use) and up to ckptEvery-1 commits.
func BenchmarkSnapshotRandomVersion(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	tbl, err := Open(ctx, openLocal(b, l.dir))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for b.Loop() {
		v := r.Int64N(l.commits + 1)
		s, err := tbl.Snapshot(ctx, v)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Files) == 0 && v > 0 {
			b.Fatal("no files")
		}
	}
	b.StopTimer()
	for i := 0; i < 5; i++ {
		checkLarge(b, l, mustSnapshot(b, tbl, r.Int64N(l.commits+1)))
	}
}

// A random version of a freshly opened table (nothing cached but the
// latest version).
func BenchmarkSnapshotRandomVersionCold(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		tbl, err := Open(ctx, openLocal(b, l.dir))
		if err != nil {
			b.Fatal(err)
		}
		v := r.Int64N(l.commits + 1)
		b.StartTimer()
		if _, err := tbl.Snapshot(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}

// Versions of a 100,000-commit log: one commitInfo read per commit
// (first call), then only new commits (later calls).
func BenchmarkVersionsFirstCall(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		tbl, err := Open(ctx, openLocal(b, l.dir))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		vs, err := tbl.Versions(ctx)
		if err != nil || int64(len(vs)) != l.commits+1 {
			b.Fatalf("Versions: %d, %v", len(vs), err)
		}
	}
}

func BenchmarkVersionsPoll(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	tbl, err := Open(ctx, openLocal(b, l.dir))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tbl.Versions(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := tbl.Versions(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// History (what `deltafs log` prints) of the 100,000-commit log: the
// earliest version, then one commit per version.
func BenchmarkHistory(b *testing.B) {
	l := largeLogOnce(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		tbl, err := Open(ctx, openLocal(b, l.dir))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n := int64(0)
		var last VersionStats
		if err := tbl.History(ctx, nil, func(vs VersionStats) error { n++; last = vs; return nil }); err != nil {
			b.Fatal(err)
		}
		files, rows := l.liveAt(l.commits)
		if n != l.commits+1 || last.Files != files || last.Rows != rows {
			b.Fatalf("History: %d versions, last %+v", n, last)
		}
	}
}
