package snapshot

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Listing the log again while writers commit: a gap that appears while
// polling (a commit not visible yet while a newer one is) is listed again
// until it fills, and never hides the versions before it.

func versionNumbers(t *testing.T, tbl *Log) []int64 {
	t.Helper()
	vs, err := tbl.Versions(context.Background())
	if err != nil {
		t.Fatalf("Versions: %v", err)
	}
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

// simpleActions are the actions of version v in fakeLog.simple.
func simpleActions(v int64) []Action {
	acts := []Action{addAction(fmt.Sprintf("f%d", v), v)}
	if v%3 == 0 {
		acts = append(acts, removeAction(fmt.Sprintf("f%d", v-1)))
	}
	return acts
}

func TestRefreshGapFills(t *testing.T) {
	f := newFakeLog(t)
	f.simple(5)
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	// Version 7 lands before 6 is visible.
	f.commit(6, simpleActions(6)...)
	c6 := f.st.Data(commitKey(6))
	f.st.Remove(commitKey(6))
	f.commit(7, simpleActions(7)...)
	for range 3 { // several polls: the gap stays pending
		if got := versionNumbers(t, tbl); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 7}) {
			t.Fatalf("Versions = %v, want 0-5 and 7", got)
		}
		_, err := tbl.Snapshot(ctx, 7)
		wantErr(t, err, ErrLogGap, "mem://table version 7: _delta_log/00000000000000000006.json: missing commit file: the log jumps from version 5 to 7")
	}
	checkSimple(t, tbl, 5)
	// More commits land, then 6 appears: every version reads.
	f.commit(8, simpleActions(8)...)
	f.st.Set(commitKey(6), c6, f.at(6))
	if got := versionNumbers(t, tbl); !slices.Equal(got, rangeOf(0, 8)) {
		t.Fatalf("Versions = %v, want 0-8", got)
	}
	for v := int64(0); v <= 8; v++ {
		checkSimple(t, tbl, v)
	}
	if l := tbl.listing(); l.pending != -1 || l.head != 8 {
		t.Errorf("listing: pending %d, head %d; want none, 8", l.pending, l.head)
	}
}

// A checkpoint written after the missing commit reads its versions, and
// the versions before the gap stay listed.
func TestRefreshGapWithLaterCheckpoint(t *testing.T) {
	f := newFakeLog(t)
	f.simple(5)
	tbl := mustOpen(t, f.st)
	f.commit(6, simpleActions(6)...)
	c6 := f.st.Data(commitKey(6))
	f.st.Remove(commitKey(6))
	f.commit(7, simpleActions(7)...)
	f.jsonCheckpoint(7)
	f.commit(8, simpleActions(8)...)
	if got := versionNumbers(t, tbl); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 7, 8}) {
		t.Fatalf("Versions = %v, want 0-5, 7, 8", got)
	}
	checkSimple(t, tbl, 8)
	checkSimple(t, tbl, 2)
	f.st.Set(commitKey(6), c6, f.at(6))
	if got := versionNumbers(t, tbl); !slices.Equal(got, rangeOf(0, 8)) {
		t.Fatalf("Versions = %v, want 0-8", got)
	}
	checkSimple(t, tbl, 6)
}

// A commit that was listed truncated (a partial write) and then completed
// is read again: the listing sees its new size.
func TestRefreshChangedCommit(t *testing.T) {
	f := newFakeLog(t)
	f.simple(5)
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	f.commit(6, simpleActions(6)...)
	full := f.st.Data(commitKey(6))
	f.st.Set(commitKey(6), full[:len(full)-9], f.at(6))
	versionNumbers(t, tbl)
	_, err := tbl.Snapshot(ctx, 6)
	wantErr(t, err, ErrCorrupt, "mem://table version 6: _delta_log/00000000000000000006.json: line ")
	f.st.Set(commitKey(6), full, f.at(6).Add(time.Second))
	versionNumbers(t, tbl)
	checkSimple(t, tbl, 6)
}

// A stray file name with a huge version (or part count) costs no memory
// or time proportional to the number: the table opens, its versions list,
// and the stray version fails naming the missing commit.
func TestHugeVersionNumbersInNames(t *testing.T) {
	f := newFakeLog(t)
	f.simple(3)
	const huge = 9_000_000_000_000_000_000
	f.st.Set(fmt.Sprintf("%s%020d.json", logDir, int64(huge)), []byte(`{"commitInfo":{}}`+"\n"), f.at(9))
	f.st.Set(fmt.Sprintf("%s%020d.checkpoint.0000000001.9999999999.parquet", logDir, 2), []byte("x"), f.at(2))
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tbl := mustOpen(t, f.st)
		if got := versionNumbers(t, tbl); !slices.Equal(got, []int64{0, 1, 2, 3, huge}) {
			t.Errorf("Versions = %v", got)
		}
		checkSimple(t, tbl, 3)
		_, err := tbl.Snapshot(ctx, huge)
		wantErr(t, err, ErrLogGap, fmt.Sprintf("version %d: _delta_log/00000000000000000004.json: missing commit file: the log jumps from version 3 to %d", int64(huge), int64(huge)))
		_, err = tbl.Snapshot(ctx, -1)
		wantErr(t, err, ErrLogGap)
		var n int
		err = tbl.History(ctx, nil, func(VersionStats) error { n++; return nil })
		wantErr(t, err, ErrLogGap, fmt.Sprintf("version %d: ", int64(huge)))
		if n != 4 {
			t.Errorf("History printed %d versions, want 4", n)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a huge version number in a file name hangs")
	}
}
