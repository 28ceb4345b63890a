package snapshot

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/testkit"
)

// Cross-checks of checkpoints, on damaged copies of real tables.

const (
	multiPart1 = "00000000000000000001.checkpoint.0000000001.0000000002.parquet"
	multiPart2 = "00000000000000000001.checkpoint.0000000002.0000000002.parquet"
)

// copyPart1OverPart2 damages golden-multi-part-checkpoint as the issue
// reports: part 2 is a copy of part 1, so the checkpoint holds part 1's
// five files twice and none of part 2's.
func copyPart1OverPart2(t *testing.T) string {
	t.Helper()
	dir := testkit.CopyTable(t, "golden-multi-part-checkpoint")
	data, err := os.ReadFile(logFilePath(dir, multiPart1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logFilePath(dir, multiPart2), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// With the commits there, version 1 is replayed from them: 10 files and
// 31 rows, not the 5 and 16 of the damaged checkpoint; History agrees.
func TestCheckpointCopiedPartFallsBackToCommits(t *testing.T) {
	dir := copyPart1OverPart2(t)
	tbl := mustOpen(t, openLocal(t, dir))
	checkReadable(t, tbl, "golden-multi-part-checkpoint", 0, 1)
	if s := mustSnapshot(t, tbl, 1); len(s.Files) != 10 || s.NumRows() != 31 {
		t.Fatalf("version 1: %d files, %d rows; want 10, 31", len(s.Files), s.NumRows())
	}
	var got []VersionStats
	if err := tbl.History(context.Background(), nil, func(vs VersionStats) error { got = append(got, vs); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Files != 10 || got[1].Rows != 31 {
		t.Fatalf("History = %+v", got)
	}
}

// Without commit 0 nothing can stand in for the checkpoint, and no
// version is left: Open fails, naming the checkpoint and the
// inconsistency in one line. With a later commit, the table opens and
// version 2 fails alike.
func TestCheckpointCopiedPartWithoutCommitsFails(t *testing.T) {
	dir := copyPart1OverPart2(t)
	if err := os.Remove(logFilePath(dir, "00000000000000000000.json")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := Open(ctx, openLocal(t, dir))
	wantErr(t, err, ErrCorrupt, dir+" version 1: _delta_log/"+multiPart1+": checkpoint holds ",
		"no older checkpoint or commits can rebuild this version")
	if strings.Count(err.Error(), "version") != 2 || strings.Contains(err.Error(), "\n") {
		t.Errorf("not one line without repeats: %q", err)
	}
}

// writeHint replaces _last_checkpoint, with a valid checksum when sum.
func writeHint(t *testing.T, dir, body string, sum bool) {
	t.Helper()
	if sum {
		canon, err := canonicalJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		s := md5.Sum([]byte(canon))
		body = strings.TrimSuffix(body, "}") + `,"checksum":"` + hex.EncodeToString(s[:]) + `"}`
	}
	if err := os.WriteFile(logFilePath(dir, "_last_checkpoint"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint whose counts disagree with _last_checkpoint is not used:
// the commits rebuild the version, or, without them, the version fails
// naming the checkpoint and both counts. A hint that describes another
// checkpoint of the version (other parts) is not compared for size.
func TestCheckpointDisagreesWithLastCheckpoint(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, hint string
		sum        bool
		want       string // "" when the checkpoint is used
	}{
		{"numOfAddFiles", `{"version":1,"size":12,"parts":2,"numOfAddFiles":9}`, true, "checkpoint holds 10 add actions, _last_checkpoint says numOfAddFiles 9"},
		{"size", `{"version":1,"size":13,"parts":2,"numOfAddFiles":10}`, true, "checkpoint holds 12 actions, _last_checkpoint says size 13"},
		{"size without checksum", `{"version":1,"size":11,"parts":2}`, false, "checkpoint holds 12 actions, _last_checkpoint says size 11"},
		{"true counts", `{"version":1,"size":12,"parts":2,"numOfAddFiles":10}`, true, ""},
		{"other parts: size not comparable", `{"version":1,"size":99,"parts":3,"numOfAddFiles":10}`, true, ""},
		{"bad checksum: hint ignored", `{"version":1,"size":99,"parts":2,"numOfAddFiles":1,"checksum":"0123456789abcdef0123456789abcdef"}`, false, ""},
		{"duplicate key: hint ignored", `{"version":1,"numOfAddFiles":10,"numOfAddFiles":1}`, false, ""},
		{"another version", `{"version":0,"numOfAddFiles":1}`, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, withCommits := range []bool{true, false} {
				dir := testkit.CopyTable(t, "golden-multi-part-checkpoint")
				writeHint(t, dir, c.hint, c.sum)
				if !withCommits {
					os.Remove(logFilePath(dir, "00000000000000000000.json"))
					os.Remove(logFilePath(dir, "00000000000000000001.json"))
				}
				st := loadDir(t, dir)
				tbl, err := Open(ctx, st)
				var s *Snapshot
				if err == nil {
					s, err = tbl.Snapshot(ctx, 1)
				}
				switch {
				case c.want == "" || withCommits:
					if err != nil {
						t.Fatalf("commits %v: %v", withCommits, err)
					}
					if len(s.Files) != 10 || s.NumRows() != 31 {
						t.Fatalf("commits %v: %d files, %d rows", withCommits, len(s.Files), s.NumRows())
					}
					if replayed := st.Reads(commitKey(0)) > 0; replayed != (c.want != "") {
						t.Errorf("commits %v: commit 0 replayed %v, want %v", withCommits, replayed, c.want != "")
					}
				default:
					wantErr(t, err, ErrCorrupt, "mem://table version 1: _delta_log/"+multiPart1+": "+c.want)
				}
			}
		})
	}
}

// The checksum of every _last_checkpoint of the shared tables verifies,
// and so does the protocol's own example.
func TestLastCheckpointChecksum(t *testing.T) {
	example := `{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}`
	canon, err := canonicalJSON([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	want := `"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"`
	if canon != want {
		t.Fatalf("canonical form\n%s\nwant\n%s", canon, want)
	}
	if s := md5.Sum([]byte(canon)); hex.EncodeToString(s[:]) != "6a92d155a59bf2eecbd4b4ec7fd1f875" {
		t.Fatalf("checksum %x", s)
	}
	files, _ := filepath.Glob(filepath.Join(testdataDir, "*", "_delta_log", "_last_checkpoint"))
	if len(files) < 9 {
		t.Fatalf("%d _last_checkpoint files", len(files))
	}
	withSum := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parseLastCheckpoint(data); !ok {
			t.Errorf("%s: not accepted", p)
		}
		if strings.Contains(string(data), `"checksum"`) {
			withSum++
			bad := strings.Replace(string(data), `"version":`, `"version": 1`, 1) // another number
			if _, ok := parseLastCheckpoint([]byte(bad)); ok {
				t.Errorf("%s: accepted with its content changed", p)
			}
		}
	}
	if withSum < 8 {
		t.Errorf("%d hints with a checksum", withSum)
	}
}

// Two parts that both hold the protocol, or a part holding a second
// metaData action, are not a reconciled state.
func TestCheckpointPartsDisagree(t *testing.T) {
	f := newFakeLog(t)
	f.simpleWith(6, func(v int64) {
		if v == 4 {
			f.multiPart(4, 2, nil)
		}
	})
	// Part 2 becomes a second full copy of the state: protocol, metaData
	// and every add again.
	p1 := "_delta_log/00000000000000000004.checkpoint.0000000001.0000000002.parquet"
	p2 := "_delta_log/00000000000000000004.checkpoint.0000000002.0000000002.parquet"
	f.st.Set(p2, f.st.Data(p1), f.at(4))
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	checkSimple(t, tbl, 6) // from the commits
	for v := int64(0); v <= 4; v++ {
		f.st.Remove(commitKey(v))
	}
	_, err := Open(ctx, f.st)
	wantErr(t, err, ErrCorrupt, "version 6: "+p1+": checkpoint holds 2 protocol actions")
	if !errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	}
}

// A checkpoint written while the table is open is checked against the
// _last_checkpoint written with it.
func TestCheckpointWrittenWhileOpenIsCrossChecked(t *testing.T) {
	f := newFakeLog(t)
	f.simple(5)
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	f.commit(6, simpleActions(6)...)
	f.jsonCheckpoint(6)
	f.st.Set(lastCheckpointKey, []byte(`{"version":6,"numOfAddFiles":99}`), f.at(6))
	f.commit(7, simpleActions(7)...)
	for v := int64(0); v <= 6; v++ {
		f.st.Remove(commitKey(v))
	}
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := tbl.Snapshot(ctx, 7)
	wantErr(t, err, ErrCorrupt, "mem://table version 7: _delta_log/00000000000000000006.checkpoint.00000006-0000-0000-0000-000000000000.json: checkpoint holds 4 add actions, _last_checkpoint says numOfAddFiles 99")
	// The hint is read once for that checkpoint, not at every poll.
	reads := f.st.Reads(lastCheckpointKey)
	for range 3 {
		if _, err := tbl.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.st.Reads(lastCheckpointKey); n != reads {
		t.Errorf("_last_checkpoint read %d more times by polls", n-reads)
	}
}
