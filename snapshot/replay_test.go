package snapshot

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/deltafs/deltafs/storage/storagetest"
)

// Every checkpoint of the shared tables gives the same snapshot as
// replaying the commits from version 0, at its own version and at every
// later version built from it.
func TestCheckpointReplayEqualsCommitReplay(t *testing.T) {
	exp := loadExpected(t)
	checked := 0
	for name, e := range exp {
		if len(e.Checkpoints) == 0 {
			continue
		}
		if _, refused := refusedTables[name]; refused {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(testdataDir, name)
			commits := mustOpen(t, openLocal(t, dir), Options{ignoreCheckpoints: true})
			vs := e.versionList()
			for cv := range e.Checkpoints {
				c, _ := strconv.ParseInt(cv, 10, 64)
				// A fresh table, so that version c comes from its checkpoint
				// and not from a cached snapshot.
				st := loadDir(t, dir)
				tbl := mustOpen(t, st, Options{CachedSnapshots: 1})
				s := mustSnapshot(t, tbl, c)
				if n := countCheckpointReads(st, c); n == 0 {
					t.Fatalf("version %d was not built from its checkpoint", c)
				}
				sameSnapshot(t, "checkpoint "+cv, s, mustSnapshot(t, commits, c))
				checked++
				for _, v := range vs {
					if v > c {
						sameSnapshot(t, "after checkpoint "+cv, mustSnapshot(t, tbl, v), mustSnapshot(t, commits, v))
					}
				}
			}
		})
	}
	if checked < 14 {
		t.Errorf("compared %d checkpoints, want at least 14", checked)
	}
}

func countCheckpointReads(st *storagetest.Mem, v int64) int {
	n := 0
	for k, c := range st.ReadsByKey() {
		if p := parseLogPath(k); p.Version == v && (p.Kind == kindCheckpoint || p.Kind == kindMultiCheckpoint || p.Kind == kindUUIDCheckpoint) {
			n += c
		}
	}
	return n
}

// Reading the log compaction files gives the same snapshots as replaying
// the commits they cover, at every version.
func TestCompactionEqualsCommitReplay(t *testing.T) {
	const name = "kernelrs-compacted-log-files-table"
	dir := filepath.Join(testdataDir, name)
	e := loadExpected(t)[name]
	commits := mustOpen(t, openLocal(t, dir))
	used := 0
	for _, v := range e.versionList() {
		st := loadDir(t, dir)
		tbl := mustOpen(t, st, Options{UseLogCompaction: true, CachedSnapshots: 1})
		before := compactionReads(st)
		s := mustSnapshot(t, tbl, v)
		if compactionReads(st) > before {
			used++
		}
		sameSnapshot(t, "compaction", s, mustSnapshot(t, commits, v))
		if want := *e.Versions[strconv.FormatInt(v, 10)].Rows; s.NumRows() != want {
			t.Errorf("version %d: %d rows with compaction, want %d", v, s.NumRows(), want)
		}
	}
	// Versions 5..25 start at 0 or 6 and can use a compaction file.
	if used < 15 {
		t.Errorf("compaction files used for %d versions, want >= 15", used)
	}
	// The latest version (5 rows: ids 0, 1, 2, 10, 12 per delta-kernel-rs).
	s := mustSnapshot(t, commits, 25)
	if s.NumRows() != 5 {
		t.Errorf("version 25: %d rows, want 5", s.NumRows())
	}
	_ = context.Background()
}

func compactionReads(st *storagetest.Mem) int {
	n := 0
	for k, c := range st.ReadsByKey() {
		if parseLogPath(k).Kind == kindCompaction {
			n += c
		}
	}
	return n
}
