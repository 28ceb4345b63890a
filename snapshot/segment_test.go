package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/storage/storagetest"
)

// Segment selection on fabricated logs: gaps, cleaned-up logs, stale or
// broken _last_checkpoint hints, incomplete multi-part checkpoints.

func wantErr(t *testing.T, err error, target error, substrings ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", target)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("got %v, want an error wrapping %v", err, target)
	}
	for _, s := range substrings {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not contain %q", err, s)
		}
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
}

// rowsAt is what fakeLog.simple gives at version v: files f1..fv, less
// every f(3k-1) removed at version 3k.
func rowsAt(v int64) (files int, rows int64) {
	for u := int64(1); u <= v; u++ {
		if (u+1)%3 == 0 && u+1 <= v {
			continue
		}
		files++
		rows += u
	}
	return
}

func checkSimple(t *testing.T, tbl *Log, v int64) *Snapshot {
	t.Helper()
	s := mustSnapshot(t, tbl, v)
	files, rows := rowsAt(v)
	if len(s.Files) != files || s.NumRows() != rows {
		t.Fatalf("version %d: %d files, %d rows; want %d, %d", v, len(s.Files), s.NumRows(), files, rows)
	}
	if s.CommitInfo.Operation != fmt.Sprintf("OP%d", v) && s.CommitInfo.Operation != "" {
		t.Fatalf("version %d: operation %q", v, s.CommitInfo.Operation)
	}
	return s
}

func TestSegmentGapWithLaterCheckpoint(t *testing.T) {
	f := newFakeLog(t)
	f.simpleWith(9, func(v int64) {
		if v == 8 {
			f.jsonCheckpoint(8)
		}
	})
	f.st.Remove(commitKey(6))
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	checkSimple(t, tbl, 9)
	checkSimple(t, tbl, 8)
	checkSimple(t, tbl, 3) // before the gap: still reconstructable
	for _, v := range []int64{6, 7} {
		_, err := tbl.Snapshot(ctx, v)
		wantErr(t, err, ErrLogGap, fmt.Sprintf("version %d: _delta_log/00000000000000000006.json:", v), "from version 5 to 7")
	}
	e, err := tbl.Earliest(ctx)
	if err != nil || e != 8 {
		t.Fatalf("Earliest = %d, %v; want 8", e, err)
	}
	vs, err := tbl.Versions(ctx)
	if err != nil || len(vs) != 2 || vs[0].Version != 8 || vs[1].Version != 9 {
		t.Fatalf("Versions = %v, %v; want 8, 9", vs, err)
	}
}

// A missing commit before the latest version fails the versions that need
// it, naming it; the versions before it stay readable, and the versions
// after it are listed (Snapshot says what is wrong).
func TestSegmentGapBeforeLatest(t *testing.T) {
	f := newFakeLog(t)
	f.simple(9)
	f.st.Remove(commitKey(4))
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	for v := int64(4); v <= 9; v++ {
		_, err := tbl.Snapshot(ctx, v)
		wantErr(t, err, nil, fmt.Sprintf("mem://table version %d: _delta_log/00000000000000000004.json: missing commit file: the log jumps from version 3 to 5", v))
		if v > 4 && !errors.Is(err, ErrLogGap) {
			t.Errorf("version %d: %v is not ErrLogGap", v, err)
		}
	}
	for v := int64(0); v <= 3; v++ {
		checkSimple(t, tbl, v)
	}
	vs, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, v := range vs {
		got = append(got, v.Version)
	}
	if !slices.Equal(got, []int64{0, 1, 2, 3, 5, 6, 7, 8, 9}) {
		t.Errorf("Versions = %v, want 0-3 and 5-9", got)
	}
}

func TestSegmentCleanedLog(t *testing.T) {
	for _, keepCommit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit5=%v", keepCommit), func(t *testing.T) {
			f := newFakeLog(t)
			f.simpleWith(9, func(v int64) {
				if v == 5 {
					f.parquetCheckpoint(5)
				}
			})
			f.lastCheckpoint(5)
			for v := int64(0); v < 5; v++ {
				f.st.Remove(commitKey(v))
			}
			if !keepCommit {
				f.st.Remove(commitKey(5))
			}
			ctx := context.Background()
			tbl := mustOpen(t, f.st)
			for v := int64(5); v <= 9; v++ {
				checkSimple(t, tbl, v)
			}
			s := mustSnapshot(t, tbl, 5)
			if keepCommit != (s.CommitInfo.Operation == "OP5") {
				t.Errorf("version 5 operation %q", s.CommitInfo.Operation)
			}
			if e, err := tbl.Earliest(ctx); err != nil || e != 5 {
				t.Fatalf("Earliest = %d, %v; want 5", e, err)
			}
			_, err := tbl.Snapshot(ctx, 3)
			wantErr(t, err, ErrVersionNotFound, "version 3", "earliest readable version 5")
			vs, err := tbl.Versions(ctx)
			if err != nil || len(vs) != 5 || vs[0].Version != 5 {
				t.Fatalf("Versions = %v, %v", vs, err)
			}
			if !keepCommit && (vs[0].Operation != "" || !vs[0].Timestamp.Equal(f.at(5).Add(1e6))) {
				t.Errorf("version 5 without commit: %+v", vs[0])
			}
		})
	}
}

func TestSegmentLastCheckpointHint(t *testing.T) {
	cases := []struct {
		name string
		hint func(f *fakeLog)
		// reads of commits at or before this version are a failure
		noReadsUpTo int64
	}{
		{"current", func(f *fakeLog) { f.lastCheckpoint(10) }, 10},
		{"stale", func(f *fakeLog) { f.lastCheckpoint(4) }, 10},
		{"missing file", func(f *fakeLog) { f.lastCheckpoint(12) }, 10},
		{"beyond latest", func(f *fakeLog) { f.lastCheckpoint(1000) }, 10},
		{"garbage", func(f *fakeLog) { f.st.Set(lastCheckpointKey, []byte("{not json"), f.t0) }, 10},
		{"absent", func(f *fakeLog) {}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeLog(t)
			f.simple(4)
			f.parquetCheckpoint(4)
			for v := int64(5); v <= 14; v++ {
				f.commit(v, addAction(fmt.Sprintf("f%d", v), v))
			}
			f.parquetCheckpoint(10)
			c.hint(f)
			tbl := mustOpen(t, f.st)
			s := mustSnapshot(t, tbl, -1)
			if s.Version != 14 || len(s.Files) != len(f.live) {
				t.Fatalf("latest: version %d with %d files; want 14 with %d", s.Version, len(s.Files), len(f.live))
			}
			for v := int64(0); v <= c.noReadsUpTo; v++ {
				if n := f.st.Reads(commitKey(v)); n > 0 {
					t.Errorf("commit %d was read to build the latest version", v)
				}
			}
			if f.st.Reads("_delta_log/00000000000000000004.checkpoint.parquet") > 0 {
				t.Errorf("the older checkpoint was read")
			}
		})
	}
}

// With a current hint, Open lists the log once, from the hint on.
func TestOpenListsFromHint(t *testing.T) {
	f := newFakeLog(t)
	f.simple(30)
	f.parquetCheckpoint(20)
	f.lastCheckpoint(20)
	tbl := mustOpen(t, f.st)
	if f.st.Lists() != 1 {
		t.Errorf("Open listed %d times, want 1", f.st.Lists())
	}
	if l := tbl.listing(); l.from != 20 {
		t.Errorf("listing from %d, want 20", l.from)
	}
	// An older version needs the rest of the log: listed once, then kept.
	checkSimple(t, tbl, 3)
	checkSimple(t, tbl, 7)
	if f.st.Lists() != 2 {
		t.Errorf("%d listings after reading old versions, want 2", f.st.Lists())
	}
}

func TestSegmentIncompleteMultiPart(t *testing.T) {
	f := newFakeLog(t)
	var two, three []string
	f.simpleWith(6, func(v int64) {
		switch v {
		case 2: // complete
			two = f.multiPart(2, 2, nil)
		case 4: // missing its third part
			three = f.multiPart(4, 3, []int{3})
		}
	})
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	checkSimple(t, tbl, 6)
	checkSimple(t, tbl, 4)
	if f.st.Reads(three[0]) > 0 {
		t.Error("the incomplete checkpoint was read")
	}
	if f.st.Reads(two[0]) == 0 || f.st.Reads(two[1]) == 0 {
		t.Error("the complete checkpoint was not read")
	}
	if f.st.Reads(commitKey(1)) > 0 {
		t.Error("commit 1 was read though the checkpoint at 2 covers it")
	}
	// Without the commits and checkpoint before it, the incomplete
	// checkpoint cannot stand in.
	for v := int64(0); v <= 4; v++ {
		f.st.Remove(commitKey(v))
	}
	for _, k := range two {
		f.st.Remove(k)
	}
	_, err := Open(ctx, f.st)
	wantErr(t, err, ErrVersionNotFound, "00000000000000000004.checkpoint.0000000001.0000000003.parquet", "incomplete")
}

// multiPart writes an n-part Parquet checkpoint of the current state at
// version v, leaving out the listed parts; it returns the part keys.
func (f *fakeLog) multiPart(v int64, n int, skip []int) []string {
	single := f.parquetCheckpoint(v)
	data := f.st.Data(single)
	f.st.Remove(single)
	var keys []string
	for p := 1; p <= n; p++ {
		key := fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logDir, v, p, n)
		keys = append(keys, key)
		skipped := false
		for _, s := range skip {
			skipped = skipped || s == p
		}
		if skipped {
			continue
		}
		// Part 1 holds everything, the others are empty checkpoints with
		// the same schema: still a valid split.
		if p == 1 {
			f.st.Set(key, data, f.at(v))
		} else {
			f.st.Set(key, f.emptyParquetCheckpoint(), f.at(v))
		}
	}
	return keys
}

// emptyParquetCheckpoint is a checkpoint part with the schema of the
// others and no add, protocol or metaData action (one tombstone).
func (f *fakeLog) emptyParquetCheckpoint() []byte {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[ckptRow](&buf, parquet.Compression(&parquet.Snappy))
	if _, err := w.Write([]ckptRow{{Remove: &ckptRemove{Path: "tombstone2"}}}); err != nil {
		f.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotVersionOutOfRange(t *testing.T) {
	f := newFakeLog(t)
	f.simple(3)
	tbl := mustOpen(t, f.st)
	ctx := context.Background()
	_, err := tbl.Snapshot(ctx, 4)
	wantErr(t, err, ErrVersionNotFound, "mem://table version 4: does not exist (the latest version is 3)")
	_, err = tbl.Snapshot(ctx, -2)
	wantErr(t, err, ErrVersionNotFound)
}

func TestNotADeltaTable(t *testing.T) {
	ctx := context.Background()
	empty := t.TempDir()
	_, err := Open(ctx, openLocal(t, empty))
	wantErr(t, err, ErrNotDeltaTable, empty+": _delta_log/: not a Delta table")
	_, err = Open(ctx, openLocal(t, empty+"/missing"))
	wantErr(t, err, ErrNotDeltaTable)
	m := storagetest.NewMem()
	m.Set("_delta_log/_last_checkpoint", []byte(`{"version":3}`), f0())
	m.Set("_delta_log/README", []byte("x"), f0())
	_, err = Open(ctx, m)
	wantErr(t, err, ErrNotDeltaTable)
}

// New commits appear after Versions (or Refresh), not before.
func TestRefreshFindsNewCommits(t *testing.T) {
	f := newFakeLog(t)
	f.simple(3)
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	f.commit(4, addAction("f4", 4))
	if s := mustSnapshot(t, tbl, -1); s.Version != 3 {
		t.Fatalf("latest before refresh = %d", s.Version)
	}
	vs, err := tbl.Versions(ctx)
	if err != nil || len(vs) != 5 || vs[4].Version != 4 || vs[4].Operation != "OP4" {
		t.Fatalf("Versions = %+v, %v", vs, err)
	}
	checkSimple(t, tbl, -1+5)
	f.commit(5, addAction("f5", 5))
	f.jsonCheckpoint(5)
	if v, err := tbl.Refresh(ctx); err != nil || v != 5 {
		t.Fatalf("Refresh = %d, %v", v, err)
	}
	if s := mustSnapshot(t, tbl, -1); s.Version != 5 {
		t.Fatalf("latest after refresh = %d", s.Version)
	}
}
