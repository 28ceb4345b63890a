package sharing

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// The listing endpoints: every page is read, within the listing's
// bounds, and a hostile server (pages without end, a repeated token, a
// huge page, items of another share, a stall) fails the listing in one
// line.

const simpleTable = "../../testdata/delta/deltars-simple_table"

// listServer shares simpleTable as share.a.t000 ... share.a.t<n-1>,
// share.b.x and other.c.y; pages of page items.
func listServer(t *testing.T, n, page int) (*sharingtest.Server, string) {
	t.Helper()
	srv := sharingtest.Start(t, time.Minute)
	for i := range n {
		srv.AddTable(t, "share", "a", fmt.Sprintf("t%03d", i), simpleTable)
	}
	srv.AddTable(t, "share", "b", "x", simpleTable)
	srv.AddTable(t, "other", "c", "y", simpleTable)
	srv.SetListPage(page)
	profile := filepath.Join(t.TempDir(), "p.share")
	srv.WriteProfile(t, profile, srv.Token)
	return srv, profile
}

func listClient(t *testing.T, profile string) *Client {
	t.Helper()
	p, err := LoadProfile(profile, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(p, Name{Profile: profile}, http.DefaultClient, 5*time.Second)
}

// TestListPages: each listing reads every page and nothing else (no
// table's endpoint).
func TestListPages(t *testing.T) {
	srv, profile := listServer(t, 120, 25)
	c := listClient(t, profile)
	ctx := context.Background()
	if got, err := c.ListShares(ctx); err != nil || fmt.Sprint(got) != "[other share]" {
		t.Fatalf("shares %v %v", got, err)
	}
	if got, err := c.ListSchemas(ctx, "SHARE"); err != nil || fmt.Sprint(got) != "[a b]" {
		t.Fatalf("schemas %v %v", got, err)
	}
	before := srv.ListRequests()
	tables, err := c.ListTables(ctx, "share", "a")
	if err != nil || len(tables) != 120 || tables[0] != "t000" || tables[119] != "t119" {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	if n := srv.ListRequests() - before; n != 5 {
		t.Fatalf("%d requests for 120 tables in pages of 25, want 5", n)
	}
	all, err := c.ListAllTables(ctx, "share")
	if err != nil || len(all) != 121 {
		t.Fatalf("all tables: %d %v", len(all), err)
	}
	for _, tb := range all {
		if tb.Schema != "a" && !(tb.Schema == "b" && tb.Name == "x") {
			t.Fatalf("all tables: %+v", tb)
		}
	}
	if _, err := c.ListSchemas(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "RESOURCE_DOES_NOT_EXIST") {
		t.Fatalf("no such share: %v", err)
	}
	if srv.TableRequests.Load() != 0 {
		t.Fatalf("listing made %d table requests", srv.TableRequests.Load())
	}
	// Names come as the server gives them: the mount leaves out those
	// that cannot be a directory.
	srv.SetListExtra("..", "a/b", "nul\x00", "t000")
	tables, err = c.ListTables(ctx, "share", "a")
	if err != nil || len(tables) != 124 || !strings.HasPrefix(strings.Join(tables, "|"), "..|a/b|nul\x00|t000|t000|") {
		t.Fatalf("hostile names: %d %q %v", len(tables), tables[:5], err)
	}
	// A refused token is the API's error.
	bad := filepath.Join(t.TempDir(), "bad.share")
	srv.WriteProfile(t, bad, "wrong")
	if _, err := listClient(t, bad).ListShares(ctx); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "UNAUTHENTICATED") {
		t.Fatalf("refused: %v", err)
	}
}

// setVar sets *p to v for the test.
func setVar[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// TestListHostile: a hostile server fails the listing in one line.
func TestListHostile(t *testing.T) {
	srv, profile := listServer(t, 30, 5)
	c := listClient(t, profile)
	ctx := context.Background()
	oneLine := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", what, err, want)
		}
	}
	setVar(t, &maxListPages, 20)
	srv.SetListEndless(true)
	_, err := c.ListTables(ctx, "share", "a")
	oneLine("endless", err, "past 20 pages")
	srv.SetListEndless(false)

	setVar(t, &maxListed, 10)
	_, err = c.ListTables(ctx, "share", "a")
	oneLine("too many", err, "more than 10 names")
	maxListed = 100_000

	for _, tc := range []struct{ name, body, want string }{
		{"repeat", `{"items":[{"name":"a"}],"nextPageToken":"same"}`, `gives page token "same" twice`},
		{"other share", `{"items":[{"name":"a","share":"evil"}]}`, `schema "a" of share "evil" among share "s"'s`},
		{"no name", `{"items":[{"name":"a"},{"share":"s"}]}`, "item 2 of page 1 has no name"},
		{"wrong type", `{"items":{"name":"a"}}`, "not a valid answer"},
		{"huge", `{"items":[{"name":"` + strings.Repeat("x", 2048) + `"}]}`, "longer than 1.0 KiB"},
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
		setVar(t, &maxListPage, 1024)
		p := filepath.Join(t.TempDir(), "h.share")
		os.WriteFile(p, []byte(`{"shareCredentialsVersion":1,"endpoint":"`+hs.URL+`","bearerToken":"tok"}`), 0o600)
		_, err := listClient(t, p).ListSchemas(ctx, "s")
		hs.Close()
		oneLine(tc.name, err, tc.want)
	}
	// Pages each within the bound, too many bytes in all.
	setVar(t, &maxListBytes, 4096)
	pad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"items":[],"nextPageToken":"p%d","x":"%s"}`, time.Now().UnixNano(), strings.Repeat(" ", 900))
	}))
	defer pad.Close()
	pp := filepath.Join(t.TempDir(), "pad.share")
	os.WriteFile(pp, []byte(`{"shareCredentialsVersion":1,"endpoint":"`+pad.URL+`","bearerToken":"tok"}`), 0o600)
	_, err = listClient(t, pp).ListShares(ctx)
	oneLine("padded pages", err, "longer than 4.0 KiB in all")

	// A table of another schema, and all-tables without a schema.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"items":[{"name":"t","share":"s","schema":"evil"}]}`))
	}))
	defer hs.Close()
	p := filepath.Join(t.TempDir(), "h.share")
	os.WriteFile(p, []byte(`{"shareCredentialsVersion":1,"endpoint":"`+hs.URL+`","bearerToken":"tok"}`), 0o600)
	_, err = listClient(t, p).ListTables(ctx, "s", "a")
	oneLine("other schema", err, `table "t" of "s"."evil" among "s"."a"'s`)

	// A server that pages slowly, without end, is cut off in time.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintf(w, `{"items":[],"nextPageToken":"p%d"}`, time.Now().UnixNano())
	}))
	defer slow.Close()
	setVar(t, &listTimeout, 500*time.Millisecond)
	p2 := filepath.Join(t.TempDir(), "slow.share")
	os.WriteFile(p2, []byte(`{"shareCredentialsVersion":1,"endpoint":"`+slow.URL+`","bearerToken":"tok"}`), 0o600)
	start := time.Now()
	_, err = listClient(t, p2).ListShares(ctx)
	oneLine("slow", err, "did not end within 500ms")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cut off after %v", d)
	}
}

// TestSharingParseCatalog: PROFILE.share (a file) and PROFILE.share#SHARE
// are catalogs; a table's location, and a directory named *.share, are not.
func TestSharingParseCatalog(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "p.share")
	os.WriteFile(profile, []byte("{}"), 0o600)
	tableDir := filepath.Join(dir, "t.share")
	os.Mkdir(tableDir, 0o755)
	for _, tc := range []struct {
		loc, profile, share string
		ok                  bool
	}{
		{profile, profile, "", true},
		{profile + "#s", profile, "s", true},
		{profile + "#s.x", profile, "s.x", true},
		{profile + "#s.a.t", "", "", false},
		{tableDir, "", "", false},
		{filepath.Join(dir, "missing.share"), "", "", false},
		{"s3://b/p.share", "", "", false},
		{"/data/table", "", "", false},
	} {
		p, s, ok := ParseCatalog(tc.loc)
		if ok != tc.ok || p != tc.profile || s != tc.share {
			t.Errorf("%s: %q %q %v", tc.loc, p, s, ok)
		}
	}
}

// TestSharingBrowser: a profile lists shares, schemas, tables; a share
// its schemas and tables; each table is named back exactly, and names
// that would name another table are refused.
func TestSharingBrowser(t *testing.T) {
	srv, profile := listServer(t, 2, 0)
	ctx := context.Background()
	b, err := NewBrowser(profile, time.Second)
	if err != nil || b.Levels() != 3 {
		t.Fatal(b, err)
	}
	for _, tc := range []struct {
		path []string
		want string
	}{{nil, "[other share]"}, {[]string{"share"}, "[a b]"}, {[]string{"share", "a"}, "[t000 t001]"}} {
		if got, err := b.List(ctx, tc.path); err != nil || fmt.Sprint(got) != tc.want {
			t.Fatalf("%v: %v %v", tc.path, got, err)
		}
	}
	if loc, err := b.Table([]string{"share", "a", "t000"}); err != nil || loc != profile+"#share.a.t000" {
		t.Fatalf("%q %v", loc, err)
	}
	if b.Name(nil) != profile || b.Name([]string{"share", "a", "t000"}) != profile+"#share.a.t000" {
		t.Fatalf("names %q %q", b.Name(nil), b.Name([]string{"share", "a", "t000"}))
	}
	sb, err := NewBrowser(profile+"#share", time.Second)
	if err != nil || sb.Levels() != 2 {
		t.Fatal(err)
	}
	if got, err := sb.List(ctx, nil); err != nil || fmt.Sprint(got) != "[a b]" {
		t.Fatalf("share: %v %v", got, err)
	}
	if loc, err := sb.Table([]string{"b", "x"}); err != nil || loc != profile+"#share.b.x" {
		t.Fatalf("%q %v", loc, err)
	}
	if sb.Name([]string{"b"}) != profile+"#share.b" {
		t.Fatalf("name %q", sb.Name([]string{"b"}))
	}
	for _, p := range [][]string{{"a.b", "t"}, {"a", "t.u"}, {"a", "t u"}, {"a"}} {
		if loc, err := sb.Table(p); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %q %v", p, loc, err)
		}
	}
	if srv.TableRequests.Load() != 0 {
		t.Fatalf("browsing made %d table requests", srv.TableRequests.Load())
	}
	if _, err := NewBrowser(profile+"#", time.Second); err == nil {
		t.Fatal("an empty share's name was taken")
	}
}

// TestListOAuth: an OAuth profile's listings carry its token from the
// token endpoint, renewed as for queries.
func TestListOAuth(t *testing.T) {
	srv, profile := oauthServer(t, 2*time.Second, nil)
	b, err := NewBrowser(profile, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := b.List(context.Background(), []string{"share", "default"}); err != nil || fmt.Sprint(got) != "[simple]" {
			t.Fatalf("tables %v %v", got, err)
		}
		time.Sleep(2500 * time.Millisecond) // past the token's life
	}
	if n := srv.TokenRequests.Load(); n < 2 {
		t.Fatalf("%d token requests over two token lives", n)
	}
}
