package unity

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/storage"
)

// TestParseCatalog: uc:// of one or two names is a catalog, of three a
// table; malformed names are refused in one line.
func TestParseCatalog(t *testing.T) {
	for _, tc := range []struct {
		loc, catalog, schema string
		ok, bad              bool
	}{
		{"uc://main", "main", "", true, false},
		{"uc://main.s", "main", "s", true, false},
		{"uc://main.s.t", "", "", false, false},
		{"uc://a.b.c.d", "", "", false, false},
		{"/data/t", "", "", false, false},
		{"s3://b/t", "", "", false, false},
		{"uc://", "", "", true, true},
		{"uc://main.", "", "", true, true},
		{"uc://.s", "", "", true, true},
		{"uc://ma/in", "", "", true, true},
		{"uc://main.s#x", "", "", true, true},
	} {
		c, s, ok, err := ParseCatalog(tc.loc)
		if ok != tc.ok || (err != nil) != tc.bad || !tc.bad && (c != tc.catalog || s != tc.schema) {
			t.Errorf("%s: %q %q %v %v", tc.loc, c, s, ok, err)
		}
	}
}

// TestBrowser: a catalog lists its schemas then their Delta tables, a
// schema its tables, and each table is named by a location Open opens;
// names that would name another table are refused.
func TestBrowser(t *testing.T) {
	s := unitytest.Start(t, time.Hour, "k", "s")
	s.AddTable("main.a.t1", "s3://b/1")
	s.AddTable("main.a.t2", "s3://b/2")
	s.AddTable("main.b.t3", "s3://b/3")
	s.AddTable("other.c.t4", "s3://b/4")
	opts := storage.Options{Catalog: storage.CatalogOptions{Endpoint: s.URL, Token: s.Token}}
	ctx := context.Background()
	b, err := NewBrowser("uc://main", opts)
	if err != nil || b.Levels() != 2 {
		t.Fatal(err)
	}
	if got, err := b.List(ctx, nil); err != nil || fmt.Sprint(got) != "[a b]" {
		t.Fatalf("schemas %v %v", got, err)
	}
	if got, err := b.List(ctx, []string{"a"}); err != nil || fmt.Sprint(got) != "[t1 t2]" {
		t.Fatalf("tables %v %v", got, err)
	}
	if loc, err := b.Table([]string{"a", "t1"}); err != nil || loc != "uc://main.a.t1" {
		t.Fatalf("table %q %v", loc, err)
	}
	if b.Name(nil) != "uc://main" || b.Name([]string{"a", "t1"}) != "uc://main.a.t1" {
		t.Fatalf("names %q %q", b.Name(nil), b.Name([]string{"a", "t1"}))
	}
	for _, p := range [][]string{{"a", "x.y"}, {"a.b", "t"}, {"a", "t?"}, {"a"}} {
		if loc, err := b.Table(p); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %q %v", p, loc, err)
		}
	}
	sb, err := NewBrowser("uc://main.b", opts)
	if err != nil || sb.Levels() != 1 {
		t.Fatal(err)
	}
	if got, err := sb.List(ctx, nil); err != nil || fmt.Sprint(got) != "[t3]" {
		t.Fatalf("schema b: %v %v", got, err)
	}
	if loc, err := sb.Table([]string{"t3"}); err != nil || loc != "uc://main.b.t3" {
		t.Fatalf("table %q %v", loc, err)
	}
	if s.Loads.Load() != 0 || s.Vended.Load() != 0 {
		t.Fatal("browsing loaded or vended a table")
	}
	// A missing catalog or schema is said as such.
	nf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		w.Write([]byte(`{"error_code":"NOT_FOUND","message":"Schema not found"}`))
	}))
	defer nf.Close()
	nb, _ := NewBrowser("uc://main.gone", storage.Options{Catalog: storage.CatalogOptions{Endpoint: nf.URL, Token: "t"}})
	if _, err := nb.List(ctx, nil); err == nil || !strings.Contains(err.Error(), "listing the tables: no such schema") {
		t.Fatalf("missing schema: %v", err)
	}
	// A refusal names what failed.
	bad, _ := NewBrowser("uc://main", storage.Options{Catalog: storage.CatalogOptions{Endpoint: s.URL, Token: "wrong"}})
	bad.c.Attempts = 1
	if _, err := bad.List(ctx, nil); err == nil || !strings.Contains(err.Error(), "listing the schemas") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("refused: %v", err)
	}
}

// FuzzCatalogName: any location is a catalog, a table or neither, never
// panics; a catalog's table names, when they make a location, name that
// very table back.
func FuzzCatalogName(f *testing.F) {
	for _, s := range []string{"uc://main\x00t", "uc://main.s\x00t", "uc://main.s.t\x00x", "uc://a\x00b.c", "uc://\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		loc, table, _ := strings.Cut(in, "\x00")
		catalog, schema, ok, err := ParseCatalog(loc)
		if !ok || err != nil {
			return
		}
		if catalog == "" || strings.Contains(catalog, ".") || strings.Contains(schema, ".") {
			t.Fatalf("%q: catalog %q schema %q", loc, catalog, schema)
		}
		b := &Browser{location: loc, catalog: catalog, schema: schema}
		path := []string{table}
		if schema == "" {
			path = []string{"s", table}
		}
		tl, err := b.Table(path)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") && !strings.ContainsAny(in, "\n\r") {
				t.Fatalf("not one line: %q", err)
			}
			return
		}
		full, err := ParseName(tl)
		parts := strings.Split(full, ".")
		if err != nil || len(parts) != 3 || parts[0] != catalog || parts[2] != table {
			t.Fatalf("%q names %q (%v), not table %q of %q", tl, full, err, table, catalog)
		}
	})
}
