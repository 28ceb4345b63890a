package unity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Catalog-managed tables through the test catalog's loadTable: a table
// written by writer/ in five versions, made catalog-managed (reader 3,
// writer 7, catalogManaged and inCommitTimestamp), its commits from
// version 2 on moved to _delta_log/_staged_commits/ and ratified in the
// catalog, reads exactly as the same table (without the feature) by path.

const managedName = "main.default.managed"

type managedFixture struct {
	uc       *unitytest.Server
	dir, ref string // the catalog-managed table, the reference by path
	commits  []unitytest.Commit
	latest   int64
	client   *Client
}

// newManagedFixture writes the table (versions 0..4) and stages the
// commits of versions from on.
func newManagedFixture(t *testing.T, from int64) *managedFixture {
	t.Helper()
	dir, ref := unitytest.ManagedTable(t, t.TempDir(), 5)
	f := &managedFixture{uc: unitytest.Start(t, time.Hour, "k", "s"), dir: dir, ref: ref}
	f.commits, f.latest = unitytest.StageCommits(t, dir, from)
	f.uc.AddTable(managedName, dir)
	f.uc.SetCommits(managedName, f.commits, f.latest)
	f.client = NewClient(Config{Endpoint: f.uc.URL, Token: f.uc.Token, Source: "test"})
	f.client.Attempts = 1
	return f
}

// open opens the table as Open does once the catalog is asked.
func (f *managedFixture) open(t *testing.T) (*catalogLog, *snapshot.Log, error) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.NewLocal(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	load := func(ctx context.Context) (LoadTableResponse, error) { return f.client.LoadTable(ctx, managedName) }
	describe := func(err error) string { return "loading the table's commits: " + err.Error() }
	_ = describe
	lt, err := load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !lt.CatalogManaged() {
		t.Fatal("the catalog does not say the table is catalog-managed")
	}
	cl, err := newCatalogLog(ctx, st, "uc://"+managedName, lt, load, describe)
	if err != nil {
		return nil, nil, err
	}
	if ok, _ := cl.CatalogLog(); !ok {
		t.Fatal("the catalog's log is not presented as such")
	}
	tbl, err := snapshot.OpenWithOptions(ctx, cl, snapshot.Options{CatalogManaged: true})
	return cl, tbl, err
}

func openRef(t *testing.T, dir string) *snapshot.Log {
	t.Helper()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := snapshot.Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// sameTable fails unless got has the versions (numbers, times,
// operations) and, at each, the files of want.
func sameTable(t *testing.T, got, want *snapshot.Log) {
	t.Helper()
	ctx := context.Background()
	gv, err := got.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wv, err := want.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(gv, wv, func(a, b snapshot.VersionInfo) bool {
		return a.Version == b.Version && a.Timestamp.Equal(b.Timestamp) && a.Operation == b.Operation
	}) {
		t.Fatalf("versions differ:\ncatalog: %v\npath:    %v", gv, wv)
	}
	for _, v := range wv {
		gs, err := got.Snapshot(ctx, v.Version)
		if err != nil {
			t.Fatal(err)
		}
		ws, _ := want.Snapshot(ctx, v.Version)
		if fmt.Sprint(paths(gs)) != fmt.Sprint(paths(ws)) || !slices.Contains(gs.Protocol.ReaderFeatures, snapshot.CatalogManagedFeature) {
			t.Fatalf("version %d: files %v, want %v (protocol %v)", v.Version, paths(gs), paths(ws), gs.Protocol.String())
		}
		at, err := got.VersionAt(ctx, v.Timestamp)
		if err != nil || at != v.Version {
			t.Fatalf("VersionAt(%v) = %d, %v; want %d", v.Timestamp, at, err, v.Version)
		}
	}
}

func paths(s *snapshot.Snapshot) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

// oneLine fails unless err is one line naming the table once and holding
// every want.
func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Count(msg, "uc://"+managedName) != 1 {
		t.Fatalf("not one line naming the table once: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("%q does not say %q", msg, w)
		}
	}
}

// TestCatalogManagedReadsAsByPath: ratified commits first, then the log;
// a published file past the catalog's latest version and a staged
// commit it never ratified are ignored.
func TestCatalogManagedReadsAsByPath(t *testing.T) {
	f := newManagedFixture(t, 2)
	// A stray commit 5 published past the catalog's latest (4), and a
	// rejected attempt at version 3: neither is the table.
	stray := filepath.Join(f.dir, "_delta_log", "00000000000000000005.json")
	if err := os.WriteFile(stray, []byte(`{"commitInfo":{"inCommitTimestamp":1}}`+"\n"+`{"remove":{"path":"x"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "_delta_log", "_staged_commits", "00000000000000000003.0f707846-cd18-4e01-b40e-84ee0ae987b0.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, tbl, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Latest() != 4 {
		t.Fatalf("latest %d, want the catalog's 4", tbl.Latest())
	}
	sameTable(t, tbl, openRef(t, f.ref))
}

// TestCatalogManagedRefresh: a new ratified commit appears at the next
// listing; a commit published (backfilled) and dropped from the
// catalog's list reads the same from the log.
func TestCatalogManagedRefresh(t *testing.T) {
	f := newManagedFixture(t, 2)
	ctx := context.Background()
	// The catalog has ratified up to 3 only.
	f.uc.SetCommits(managedName, f.commits[:2], 3)
	_, tbl, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Latest() != 3 {
		t.Fatalf("latest %d, want 3", tbl.Latest())
	}
	loads := f.uc.Loads.Load()
	f.uc.SetCommits(managedName, f.commits, 4)
	if l, err := tbl.Refresh(ctx); err != nil || l != 4 {
		t.Fatalf("refresh: %d, %v", l, err)
	}
	if f.uc.Loads.Load() != loads+1 {
		t.Fatalf("%d loadTable calls for one refresh", f.uc.Loads.Load()-loads)
	}
	// Publish 2 and 3 (copies of the staged files), the catalog forgets them.
	for _, c := range f.commits[:2] {
		data, err := os.ReadFile(filepath.Join(f.dir, "_delta_log", "_staged_commits", c.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, "_delta_log", fmt.Sprintf("%020d.json", c.Version)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	sameTable(t, tbl, openRef(t, f.ref)) // 2 and 3 both published and ratified: the same bytes
	f.uc.SetCommits(managedName, f.commits[2:], 4)
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	_, fresh, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	sameTable(t, fresh, openRef(t, f.ref))
	sameTable(t, tbl, openRef(t, f.ref))
}

// TestCatalogManagedHostileCommits: a ratified commit that is missing,
// of another size, another version's, not a staged name, or whose
// published copy differs fails that version and the later ones in one
// line naming the table, the version and the files; older versions read.
func TestCatalogManagedHostileCommits(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(f *managedFixture) // spoils version 3 (f.commits[1])
		want  []string
	}{
		{"missing", func(f *managedFixture) {
			os.Remove(filepath.Join(f.dir, "_delta_log", "_staged_commits", f.commits[1].FileName))
		}, []string{"the catalog ratified it as _delta_log/_staged_commits/00000000000000000003.", "which does not exist"}},
		{"size", func(f *managedFixture) { f.commits[1].FileSize++ }, []string{"bytes, which holds"}},
		{"other version", func(f *managedFixture) {
			old := filepath.Join(f.dir, "_delta_log", "_staged_commits", f.commits[1].FileName)
			f.commits[1].FileName = "00000000000000000004" + strings.TrimPrefix(f.commits[1].FileName, "00000000000000000003")
			os.Rename(old, filepath.Join(f.dir, "_delta_log", "_staged_commits", f.commits[1].FileName))
		}, []string{"a commit proposed for version 4"}},
		{"not a staged name", func(f *managedFixture) { f.commits[1].FileName = "../00000000000000000003.json" }, []string{"not a staged commit's name"}},
		{"published copy differs", func(f *managedFixture) {
			data, _ := os.ReadFile(filepath.Join(f.dir, "_delta_log", "_staged_commits", f.commits[1].FileName))
			data = []byte(strings.Replace(string(data), "b3", "c3", 1))
			os.WriteFile(filepath.Join(f.dir, "_delta_log", "00000000000000000003.json"), data, 0o644)
		}, []string{"differs from the catalog's ratified commit _delta_log/_staged_commits/00000000000000000003.", "the table is corrupt"}},
		{"published copy of another size", func(f *managedFixture) {
			os.WriteFile(filepath.Join(f.dir, "_delta_log", "00000000000000000003.json"), []byte("{}\n"), 0o644)
		}, []string{"differs from the catalog's ratified commit"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newManagedFixture(t, 2)
			c.spoil(f)
			f.uc.SetCommits(managedName, f.commits, f.latest)
			_, tbl, err := f.open(t)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ref := openRef(t, f.ref)
			for v := int64(0); v <= 4; v++ {
				s, err := tbl.Snapshot(ctx, v)
				if v < 3 {
					ws, _ := ref.Snapshot(ctx, v)
					if err != nil || fmt.Sprint(paths(s)) != fmt.Sprint(paths(ws)) {
						t.Fatalf("version %d: %v", v, err)
					}
					continue
				}
				oneLine(t, err, c.want...)
				prefix := fmt.Sprintf("uc://%s version %d: _delta_log/00000000000000000003.json: ", managedName, v)
				if !strings.HasPrefix(err.Error(), prefix) || strings.Count(err.Error(), "_delta_log/00000000000000000003.json") != 1 {
					t.Fatalf("%q does not start %q, naming the file once", err, prefix)
				}
			}
		})
	}
}

// TestCatalogManagedHostileAnswers: an answer that skips a version,
// ratifies one twice, contradicts its latest version or gives none is
// refused in one line; one that goes back, or re-ratifies a version as
// another file, fails the refresh and keeps what was read.
func TestCatalogManagedHostileAnswers(t *testing.T) {
	for _, c := range []struct {
		name    string
		commits func(cs []unitytest.Commit) ([]unitytest.Commit, int64)
		want    string
	}{
		{"gap", func(cs []unitytest.Commit) ([]unitytest.Commit, int64) { return []unitytest.Commit{cs[0], cs[2]}, 4 }, "the ratified commits skip version 3"},
		{"twice", func(cs []unitytest.Commit) ([]unitytest.Commit, int64) { return append(cs, cs[2]), 4 }, "version 4 is ratified twice"},
		{"latest beyond", func(cs []unitytest.Commit) ([]unitytest.Commit, int64) { return cs, 6 }, "latest-table-version 6, but the newest ratified commit is version 4"},
		{"no latest", func(cs []unitytest.Commit) ([]unitytest.Commit, int64) { return nil, -1 }, "no latest-table-version and no commits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newManagedFixture(t, 2)
			cs, l := c.commits(f.commits)
			f.uc.SetCommits(managedName, cs, l)
			_, _, err := f.open(t)
			oneLine(t, err, "the catalog's answer is inconsistent: "+c.want)
		})
	}
	f := newManagedFixture(t, 2)
	cl, tbl, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The same staged file, now of another size: checked again.
	resized := slices.Clone(f.commits)
	resized[2].FileSize--
	f.uc.SetCommits(managedName, resized, 4)
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, err := snapshot.OpenWithOptions(ctx, cl, snapshot.Options{CatalogManaged: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fresh.Snapshot(ctx, 4)
	oneLine(t, err, "version 4: _delta_log/00000000000000000004.json: the catalog ratified it as", "bytes, which holds")
	f.uc.SetCommits(managedName, f.commits, 4)
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f.uc.SetCommits(managedName, f.commits[:2], 3)
	_, err = tbl.Refresh(ctx)
	oneLine(t, err, "its latest version went back from 4 to 3")
	other := slices.Clone(f.commits)
	other[2].FileName = "00000000000000000004.7a980438-cb67-4b89-82d2-86f73239b6d6.json"
	f.uc.SetCommits(managedName, other, 4)
	_, err = tbl.Refresh(ctx)
	oneLine(t, err, "version 4 was ratified as _delta_log/_staged_commits/"+f.commits[2].FileName+", now as")
	if s, err := tbl.Snapshot(ctx, 4); err != nil || tbl.Latest() != 4 || len(s.Files) == 0 {
		t.Fatalf("the versions read before: %v", err)
	}
}

// TestCatalogManagedDropped: a table dropped from the catalog while open
// fails its refresh and then every read in one line (the versions already
// listed too: the catalog no longer vouches for them), until the catalog
// has it again.
func TestCatalogManagedDropped(t *testing.T) {
	f := newManagedFixture(t, 2)
	cl, tbl, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.uc.Drop(managedName)
	_, err = tbl.Refresh(ctx)
	oneLine(t, err, "the catalog no longer has the table (dropped?): HTTP 404 NoSuchTableException")
	s, _ := openRef(t, f.ref).Snapshot(ctx, 4)
	_, err = storage.ReadAll(ctx, cl, s.Files[0].Path)
	oneLine(t, err, "no longer has the table")
	_, err = storage.ReadAll(ctx, cl, "_delta_log/00000000000000000001.json")
	oneLine(t, err, "no longer has the table")
	_, err = cl.List(ctx, "", "")
	oneLine(t, err, "no longer has the table")
	f.uc.AddTable(managedName, f.dir)
	f.uc.SetCommits(managedName, f.commits, f.latest)
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ReadAll(ctx, cl, s.Files[0].Path); err != nil {
		t.Fatal(err)
	}
	sameTable(t, tbl, openRef(t, f.ref))
}

// TestCatalogManagedSlowOrFailing: a catalog that does not answer within
// LoadTimeout, or fails, fails the refresh within the bound in one line;
// the versions read keep reading, and the next answer is followed.
func TestCatalogManagedSlowOrFailing(t *testing.T) {
	old := LoadTimeout
	LoadTimeout = 300 * time.Millisecond
	defer func() { LoadTimeout = old }()
	f := newManagedFixture(t, 2)
	_, tbl, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.uc.LoadDelay.Store(int64(10 * time.Second))
	start := time.Now()
	_, err = tbl.Refresh(ctx)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a silent catalog held the refresh %v", d)
	}
	oneLine(t, err, "loading the table's commits", "deadline exceeded")
	f.uc.LoadDelay.Store(0)
	f.uc.LoadStatus.Store(500)
	_, err = tbl.Refresh(ctx)
	oneLine(t, err, "HTTP 500 InternalServerErrorException: the catalog is failing")
	if _, err := tbl.Snapshot(ctx, 4); err != nil {
		t.Fatal(err)
	}
	f.uc.LoadStatus.Store(0)
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	sameTable(t, tbl, openRef(t, f.ref))
}
