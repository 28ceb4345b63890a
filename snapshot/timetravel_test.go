package snapshot

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// setCommitTimes copies a table and sets each commit file's modification
// time to its commitInfo.timestamp from EXPECTED.json (git keeps no
// mtimes). It returns the directory and the times by version.
func setCommitTimes(t *testing.T, name string, e expectedTable) (string, map[int64]time.Time) {
	t.Helper()
	dir := testkit.CopyTable(t, name)
	times := map[int64]time.Time{}
	for k, ev := range e.Versions {
		v, _ := strconv.ParseInt(k, 10, 64)
		if ev.CommitTimestamp == nil {
			t.Fatalf("%s version %d has no commit timestamp", name, v)
		}
		ts := time.UnixMilli(*ev.CommitTimestamp)
		if err := os.Chtimes(logFilePath(dir, fmt.Sprintf("%020d.json", v)), ts, ts); err != nil {
			t.Fatal(err)
		}
		times[v] = ts
	}
	return dir, times
}

func TestVersionAtFromFileTimes(t *testing.T) {
	exp := loadExpected(t)
	ctx := context.Background()
	tested := 0
	for name, e := range exp {
		if _, refused := refusedTables[name]; refused || name == "deltars-cdc_ict_table" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir, times := setCommitTimes(t, name, e)
			tbl := mustOpen(t, openLocal(t, dir))
			vs := e.versionList()
			infos, err := tbl.Versions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				ts := times[v]
				if !infos[i].Timestamp.Equal(ts) {
					t.Errorf("Versions: version %d at %v, want %v", v, infos[i].Timestamp, ts)
				}
				if s := mustSnapshot(t, tbl, v); !s.Timestamp.Equal(ts) {
					t.Errorf("Snapshot(%d).Timestamp = %v, want %v", v, s.Timestamp, ts)
				}
				// Exactly at the commit.
				if got, err := tbl.VersionAt(ctx, ts); err != nil || got != v {
					t.Errorf("VersionAt(time of %d) = %d, %v", v, got, err)
				}
				// Between this commit and the next one.
				if i+1 < len(vs) && times[vs[i+1]].Sub(ts) > time.Millisecond {
					mid := ts.Add(times[vs[i+1]].Sub(ts) / 2)
					if got, err := tbl.VersionAt(ctx, mid); err != nil || got != v {
						t.Errorf("VersionAt(between %d and %d) = %d, %v", v, vs[i+1], got, err)
					}
					if got, err := tbl.VersionAt(ctx, times[vs[i+1]].Add(-time.Nanosecond)); err != nil || got != v {
						t.Errorf("VersionAt(just before %d) = %d, %v", vs[i+1], got, err)
					}
				}
			}
			// Before the first commit: an error naming it.
			_, err = tbl.VersionAt(ctx, times[vs[0]].Add(-time.Millisecond))
			wantErr(t, err, ErrVersionNotFound, "before the earliest commit", fmt.Sprintf("version %d at", vs[0]))
			// After the last: the latest.
			if got, err := tbl.VersionAt(ctx, times[vs[len(vs)-1]].Add(24*time.Hour)); err != nil || got != vs[len(vs)-1] {
				t.Errorf("VersionAt(after the last) = %d, %v", got, err)
			}
			tested++
		})
	}
	if tested != 24 {
		t.Errorf("tested %d tables, want 24", tested)
	}
}

// deltars-cdc_ict_table enables in-commit timestamps: they decide, not
// the file times. Its version 1 was edited to an earlier time than version
// 0, so only versions 2 and 3 are checked at their boundaries.
func TestVersionAtInCommitTimestamps(t *testing.T) {
	const name = "deltars-cdc_ict_table"
	e := loadExpected(t)[name]
	dir := testkit.CopyTable(t, name)
	// File times that would give other answers: all in 2001.
	for v := int64(0); v <= 3; v++ {
		ts := time.Date(2001, 1, 1, 0, 0, int(v), 0, time.UTC)
		os.Chtimes(logFilePath(dir, fmt.Sprintf("%020d.json", v)), ts, ts)
	}
	ctx := context.Background()
	tbl := mustOpen(t, openLocal(t, dir))
	ict := func(v int64) time.Time { return time.UnixMilli(*e.Versions[strconv.FormatInt(v, 10)].InCommitTS) }
	infos, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if !in.Timestamp.Equal(ict(in.Version)) {
			t.Errorf("version %d at %v, want its in-commit timestamp %v", in.Version, in.Timestamp, ict(in.Version))
		}
		if s := mustSnapshot(t, tbl, in.Version); !s.Timestamp.Equal(ict(in.Version)) {
			t.Errorf("Snapshot(%d).Timestamp = %v", in.Version, s.Timestamp)
		}
	}
	cases := []struct {
		at   time.Time
		want int64
	}{
		{ict(2), 2},
		{ict(2).Add(time.Millisecond), 2},
		{ict(3).Add(-time.Millisecond), 2},
		{ict(3), 3},
		{ict(3).Add(time.Hour), 3},
	}
	for _, c := range cases {
		if got, err := tbl.VersionAt(ctx, c.at); err != nil || got != c.want {
			t.Errorf("VersionAt(%v) = %d, %v; want %d", c.at, got, err, c.want)
		}
	}
	_, err = tbl.VersionAt(ctx, time.Date(2001, 6, 1, 0, 0, 0, 0, time.UTC))
	wantErr(t, err, ErrVersionNotFound)
}

// In-commit timestamps enabled at version 3 of a fabricated log: earlier
// versions keep their file times.
func TestInCommitTimestampEnablementVersion(t *testing.T) {
	f := newFakeLog(t)
	f.simple(2)
	ictBase := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	conf := map[string]string{
		"delta.enableInCommitTimestamps":             "true",
		"delta.inCommitTimestampEnablementVersion":   "3",
		"delta.inCommitTimestampEnablementTimestamp": strconv.FormatInt(ictBase.UnixMilli(), 10),
	}
	for v := int64(3); v <= 5; v++ {
		ts := ictBase.Add(time.Duration(v) * time.Minute).UnixMilli()
		line := mustJSON(Action{CommitInfo: &CommitInfo{Timestamp: ts, InCommitTimestamp: &ts, Operation: "WRITE"}}) + "\n"
		if v == 3 {
			line += mustJSON(metadataAction(conf)) + "\n"
		}
		line += mustJSON(addAction(fmt.Sprintf("g%d", v), 1)) + "\n"
		f.st.Set(commitKey(v), []byte(line), f.at(v))
	}
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	infos, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		want := f.at(in.Version)
		if in.Version >= 3 {
			want = ictBase.Add(time.Duration(in.Version) * time.Minute)
		}
		if !in.Timestamp.Equal(want) {
			t.Errorf("version %d at %v, want %v", in.Version, in.Timestamp, want)
		}
	}
	if v, err := tbl.VersionAt(ctx, f.at(2)); err != nil || v != 2 {
		t.Errorf("VersionAt(file time of 2) = %d, %v", v, err)
	}
	if v, err := tbl.VersionAt(ctx, ictBase.Add(4*time.Minute+time.Second)); err != nil || v != 4 {
		t.Errorf("VersionAt(ict of 4 + 1s) = %d, %v", v, err)
	}
}

// Without in-commit timestamps a version's time is its commit file's
// modification time, which the listing gives: Versions reads no commit
// file beyond what building the latest version needs (the newest
// checkpoint and the commits after it), however long the log.
func TestVersionsReadsNoOldCommits(t *testing.T) {
	f := newFakeLog(t)
	f.simpleWith(500, func(v int64) {
		if v == 490 {
			f.jsonCheckpoint(v)
		}
	})
	tbl := mustOpen(t, f.st)
	infos, err := tbl.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 501 {
		t.Fatalf("%d versions, want 501", len(infos))
	}
	for _, in := range infos {
		if !in.Timestamp.Equal(f.at(in.Version)) {
			t.Errorf("version %d at %v, want its file time %v", in.Version, in.Timestamp, f.at(in.Version))
		}
	}
	for v := int64(0); v <= 490; v++ {
		if n := f.st.Reads(commitKey(v)); n != 0 {
			t.Errorf("commit %d read %d times, want 0", v, n)
		}
	}
	// The operation is known once the commit is read for a snapshot.
	if s := mustSnapshot(t, tbl, 10); s.CommitInfo.Operation != "OP10" {
		t.Errorf("version 10 operation %q", s.CommitInfo.Operation)
	}
}

// File systems keep nanoseconds; Delta's times are milliseconds. With
// sub-millisecond file times, every version's time is whole milliseconds,
// and the time deltafs prints for it, in each of its forms, selects that
// version (a nanosecond time read back as milliseconds selected the
// version before, and the first version's own time was "before the
// earliest commit").
func TestVersionTimesAreMillisecondsAndSelectTheirVersion(t *testing.T) {
	exp := loadExpected(t)
	ctx := context.Background()
	tested := 0
	for name, e := range exp {
		if _, refused := refusedTables[name]; refused || name == "deltars-cdc_ict_table" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir, times := setCommitTimes(t, name, e)
			for v, ts := range times {
				ns := ts.Add(987654 * time.Nanosecond)
				if err := os.Chtimes(logFilePath(dir, fmt.Sprintf("%020d.json", v)), ns, ns); err != nil {
					t.Fatal(err)
				}
			}
			tbl := mustOpen(t, openLocal(t, dir))
			infos, err := tbl.Versions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if in.Timestamp.Nanosecond()%int(time.Millisecond) != 0 || !in.Timestamp.Equal(times[in.Version]) {
					t.Errorf("version %d at %v, want %v", in.Version, in.Timestamp, times[in.Version])
				}
				if s := mustSnapshot(t, tbl, in.Version); !s.Timestamp.Equal(in.Timestamp) {
					t.Errorf("Snapshot(%d).Timestamp = %v, want %v", in.Version, s.Timestamp, in.Timestamp)
				}
				for _, printed := range []string{
					strconv.FormatInt(in.Timestamp.UnixMilli(), 10),
					in.Timestamp.UTC().Format(LogTimeLayout),
					in.Timestamp.UTC().Format(time.RFC3339Nano),
					in.Timestamp.In(time.FixedZone("", -7*3600)).Format(time.RFC3339Nano),
				} {
					at, err := ParseTime(printed)
					if err != nil {
						t.Fatalf("ParseTime(%q): %v", printed, err)
					}
					if got, err := tbl.VersionAt(ctx, at); err != nil || got != in.Version {
						t.Errorf("VersionAt(%s) = %d, %v; want %d", printed, got, err, in.Version)
					}
				}
			}
			tested++
		})
	}
	if tested != 24 {
		t.Errorf("tested %d tables, want 24", tested)
	}
}

func TestParseTime(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ms int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ms*int(time.Millisecond), time.UTC)
	}
	want := utc(2023, 1, 12, 3, 20, 25, 21)
	for _, s := range []string{
		"1673493625021",
		"2023-01-12T03:20:25.021Z",
		"2023-01-12T05:20:25.021+02:00",
		"2023-01-12T03:20:25.021000000Z",
		"2023-01-12 03:20:25.021",
	} {
		got, err := ParseTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	whole := utc(2023, 1, 12, 3, 20, 25, 0)
	for _, s := range []string{"2023-01-12T03:20:25Z", "2023-01-12 03:20:25", "2023-01-12T04:20:25+01:00"} {
		if got, err := ParseTime(s); err != nil || !got.Equal(whole) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, whole)
		}
	}
	if got, err := ParseTime("-1000"); err != nil || !got.Equal(time.Unix(-1, 0)) {
		t.Errorf("ParseTime(-1000) = %v, %v", got, err)
	}
	for _, s := range []string{"", "yesterday", "2023-01-12", "2023-01-12T03:20:25", "12:00", "1e3", "+5", "2023-01-12 03:20:25Z", "99999999999999999999"} {
		_, err := ParseTime(s)
		if err == nil || !strings.Contains(err.Error(), "is not a time: want Unix milliseconds") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseTime(%q): %v", s, err)
		}
	}
}
