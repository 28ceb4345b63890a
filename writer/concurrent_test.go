package writer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

var tagSchema = schemaOf(fieldOf("id", "long", false), fieldOf("tag", "string", false))

// tagged makes n rows tagged prefix-0, prefix-1, ...
func tagged(prefix string, n int) Rows {
	var rows []Row
	for i := range n {
		rows = append(rows, Row{nil, fmt.Sprintf("%s-%d", prefix, i)})
	}
	return SliceRows(rows)
}

// liveTags lists the tag and id of every live row.
func liveTags(t *testing.T, dir string) (tags map[string]int, ids []int64) {
	t.Helper()
	tags = map[string]int{}
	for _, r := range snaptest.LiveRows(t, dir) {
		tags[string(r["tag"].([]byte))]++
		ids = append(ids, r["id"].(int64))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return tags, ids
}

// TestConcurrentAppends: 4 writers x 5 appends race for versions; every
// commit lands on its own version, nothing is lost or overwritten, and ids
// stay unique (writers that lose renumber their files).
func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Write(ctx, snaptest.Local(t, dir), tagSchema, tagged("init", 1), Options{IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	const writers, appends, rowsEach = 4, 5, 3
	var mu sync.Mutex
	versions := map[int64]string{}
	retried := 0
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer its own storage, as separate processes would; a
			// pause before each commit put makes writers collide.
			st := slowCommits{snaptest.Local(t, dir)}
			for a := range appends {
				tag := fmt.Sprintf("w%d-a%d", w, a)
				res, err := Write(ctx, st, tagSchema, tagged(tag, rowsEach), Options{IDColumn: "id", RowsPerFile: 2})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", tag, err)
					return
				}
				mu.Lock()
				if prev, dup := versions[res.Version]; dup {
					errs <- fmt.Errorf("%s and %s both report version %d", prev, tag, res.Version)
				}
				versions[res.Version] = tag
				if res.Attempts > 1 {
					retried++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	if s.Version != writers*appends {
		t.Fatalf("latest version %d, want %d", s.Version, writers*appends)
	}
	for v := int64(1); v <= writers*appends; v++ {
		acts := commitActions(t, dir, v)
		if n := len(actionsOf(acts, "add")); n != 2 {
			t.Errorf("version %d has %d adds", v, n)
		}
		if len(actionsOf(acts, "metaData")) != 0 || len(actionsOf(acts, "remove")) != 0 {
			t.Errorf("version %d has metaData or removes", v)
		}
	}
	tags, ids := liveTags(t, dir)
	if len(ids) != 1+writers*appends*rowsEach || s.NumRows() != int64(len(ids)) {
		t.Fatalf("%d rows (log says %d)", len(ids), s.NumRows())
	}
	for w := range writers {
		for a := range appends {
			for i := range rowsEach {
				if tag := fmt.Sprintf("w%d-a%d-%d", w, a, i); tags[tag] != 1 {
					t.Errorf("row %s present %d times", tag, tags[tag])
				}
			}
		}
	}
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("ids are not 0..%d: %v", len(ids)-1, ids)
		}
	}
	t.Logf("%d of %d appends retried after losing a version", retried, writers*appends)
	if retried == 0 {
		t.Error("no writer lost a version: the race was not exercised")
	}
}

// slowCommits pauses before putting a commit file.
type slowCommits struct{ storage.Storage }

func (s slowCommits) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if strings.HasPrefix(key, logDir) {
		time.Sleep(3 * time.Millisecond)
	}
	return s.Storage.Put(ctx, key, data, ifAbsent)
}

// TestConcurrentOverwrite: appends race an overwriter. Each overwrite
// commit removes exactly the files live at the version before it, and the
// table ends as the last overwrite plus the appends after it.
func TestConcurrentOverwrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Write(ctx, snaptest.Local(t, dir), tagSchema, tagged("init", 2), Options{IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	type op struct {
		tag       string
		overwrite bool
		version   int64
	}
	var mu sync.Mutex
	var ops []op
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	run := func(name string, n int, mode Mode) {
		defer wg.Done()
		st := snaptest.Local(t, dir)
		for i := range n {
			tag := fmt.Sprintf("%s%d", name, i)
			res, err := Write(ctx, st, tagSchema, tagged(tag, 2), Options{Mode: mode, IDColumn: "id"})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			ops = append(ops, op{tag, mode == ModeOverwrite, res.Version})
			mu.Unlock()
		}
	}
	wg.Add(3)
	go run("a", 5, ModeAppend)
	go run("b", 5, ModeAppend)
	go run("o", 4, ModeOverwrite)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tbl, err := snapshot.Open(ctx, snaptest.Local(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for _, o := range ops {
		last = max(last, o.version)
		if !o.overwrite {
			continue
		}
		prev, err := tbl.Snapshot(ctx, o.version-1)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, f := range prev.Files {
			want[f.Path] = true
		}
		removes := actionsOf(commitActions(t, dir, o.version), "remove")
		for _, rm := range removes {
			if !want[rm["path"].(string)] {
				t.Errorf("version %d removes %s, not live at %d", o.version, rm["path"], o.version-1)
			}
		}
		if len(removes) != len(want) {
			t.Errorf("version %d removes %d files, %d were live", o.version, len(removes), len(want))
		}
	}
	if last != int64(len(ops)) {
		t.Fatalf("last version %d after %d writes", last, len(ops))
	}
	// Expected: the last overwrite and the appends after it.
	lastOw := op{version: -1}
	for _, o := range ops {
		if o.overwrite && o.version > lastOw.version {
			lastOw = o
		}
	}
	want := map[string]int{lastOw.tag + "-0": 1, lastOw.tag + "-1": 1}
	for _, o := range ops {
		if !o.overwrite && o.version > lastOw.version {
			want[o.tag+"-0"], want[o.tag+"-1"] = 1, 1
		}
	}
	got, ids := liveTags(t, dir)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("live rows %v, want %v", got, want)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("duplicate id %d", ids[i])
		}
	}
}

// TestConcurrentCreate: writers race to create a table; one commit creates
// it, the others append to it.
func TestConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Write(ctx, snaptest.Local(t, dir), tagSchema, tagged(fmt.Sprint("c", w), 2), Options{IDColumn: "id"}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for v := int64(0); v < 4; v++ {
		acts := commitActions(t, dir, v)
		ci := actionsOf(acts, "commitInfo")[0]
		create := v == 0
		if (ci["operation"] == "CREATE TABLE") != create || (len(actionsOf(acts, "metaData")) == 1) != create || (len(actionsOf(acts, "protocol")) == 1) != create {
			t.Errorf("version %d: operation %v, %d metaData", v, ci["operation"], len(actionsOf(acts, "metaData")))
		}
	}
	if _, ids := liveTags(t, dir); len(ids) != 8 || ids[7] != 7 {
		t.Fatalf("ids %v", ids)
	}
}

// TestCreateRaceSchemaMismatch: the writer that loses the race to create a
// table with another schema fails, naming the reason.
func TestCreateRaceSchemaMismatch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loser, err := newWrite(ctx, snaptest.Local(t, dir), schemaOf(fieldOf("x", "double", false)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := loser.writeFiles(ctx, SliceRows([]Row{{1.0}})); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, snaptest.Local(t, dir), tagSchema, tagged("w", 1), Options{IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	_, err = loser.commit(ctx)
	if err == nil || !strings.Contains(err.Error(), "created concurrently") || !strings.Contains(err.Error(), "schema mismatch") {
		t.Fatalf("err %v", err)
	}
	if s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1); s.Version != 0 {
		t.Fatalf("version %d", s.Version)
	}
}

// TestIDRenumbering: a write whose ids were taken by a commit that landed
// after it read the table rewrites its files with shifted ids and stats.
func TestIDRenumbering(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := snaptest.Local(t, dir)
	if _, err := Write(ctx, st, tagSchema, tagged("first", 2), Options{IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	slow, err := newWrite(ctx, st, tagSchema, Options{IDColumn: "id", RowsPerFile: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.writeFiles(ctx, tagged("slow", 3)); err != nil {
		t.Fatal(err)
	}
	if slow.firstID != 2 {
		t.Fatalf("first id %d", slow.firstID)
	}
	if _, err := Write(ctx, st, tagSchema, tagged("fast", 5), Options{IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	res, err := slow.commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || res.Attempts != 2 || res.FirstID != 7 || res.Files != 2 {
		t.Fatalf("result %+v", res)
	}
	rows := map[string]int64{}
	for _, r := range snaptest.LiveRows(t, dir) {
		rows[string(r["tag"].([]byte))] = r["id"].(int64)
	}
	if rows["slow-0"] != 7 || rows["slow-1"] != 8 || rows["slow-2"] != 9 || rows["fast-4"] != 6 || len(rows) != 10 {
		t.Fatalf("ids %v", rows)
	}
	for _, a := range actionsOf(commitActions(t, dir, 2), "add") {
		var st struct{ MinValues, MaxValues map[string]any }
		json.Unmarshal([]byte(a["stats"].(string)), &st)
		lo, hi := st.MinValues["id"].(float64), st.MaxValues["id"].(float64)
		if lo < 7 || hi > 9 || hi-lo > 1 {
			t.Errorf("shifted stats %v", a["stats"])
		}
	}
}

// TestCreateRaceNullability: the loser of a create race wrote nulls into a
// column the winner declared NOT NULL: its commit fails.
func TestCreateRaceNullability(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loser, err := newWrite(ctx, snaptest.Local(t, dir), schemaOf(fieldOf("x", "double", true)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := loser.writeFiles(ctx, SliceRows([]Row{{1.0}, {nil}})); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, snaptest.Local(t, dir), schemaOf(fieldOf("x", "double", false)), SliceRows([]Row{{2.0}}), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := loser.commit(ctx); err == nil || !strings.Contains(err.Error(), `column "x" is NOT NULL in the table but the rows hold nulls`) {
		t.Fatalf("err %v", err)
	}
}
