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
)

func listClient(url, token string) *Client {
	c := NewClient(Config{Endpoint: url, Token: token})
	c.Attempts = 1
	return c
}

// ListSchemas and ListTables read every page (the specification's 50 at
// most a page) and nothing else.
func TestListPages(t *testing.T) {
	s := unitytest.Start(t, time.Hour, "k", "s")
	for i := range 1000 {
		s.AddTable(fmt.Sprintf("main.big.t%04d", i), "s3://b/t")
	}
	s.AddTable("main.small.x", "s3://b/x")
	s.AddTable("other.nope.y", "s3://b/y")
	c := listClient(s.URL, s.Token)
	schemas, err := c.ListSchemas(context.Background(), "main")
	if err != nil || fmt.Sprint(schemas) != "[big small]" {
		t.Fatalf("schemas %v, %v", schemas, err)
	}
	before := s.Requests.Load()
	tables, err := c.ListTables(context.Background(), "main", "big")
	if err != nil || len(tables) != 1000 || tables[0] != "t0000" || tables[999] != "t0999" {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	if n := s.Requests.Load() - before; n != 20 {
		t.Fatalf("%d requests for 1,000 tables, want 20 pages of 50", n)
	}
	if s.Loads.Load() != 0 || s.Vended.Load() != 0 {
		t.Fatal("listing loaded or vended")
	}
}

// Hostile listings fail closed in one line: endless pages, a repeated
// token, too many names, another schema's table, an error.
func TestListHostile(t *testing.T) {
	s := unitytest.Start(t, time.Hour, "k", "s")
	s.AddTable("main.s.a", "s3://b/a")
	s.SetListEndless(true)
	oldPages := maxListPages
	maxListPages = 30
	t.Cleanup(func() { maxListPages = oldPages })
	c := listClient(s.URL, s.Token)
	if _, err := c.ListTables(context.Background(), "main", "s"); err == nil || !strings.Contains(err.Error(), "past 30 pages") {
		t.Fatalf("endless: %v", err)
	}
	s.SetListEndless(false)

	for _, tc := range []struct {
		name, body, want string
	}{
		{"repeat", `{"tables":[{"name":"a","data_source_format":"DELTA"}],"next_page_token":"same"}`, `gives page token "same" twice`},
		{"other schema", `{"tables":[{"name":"a","catalog_name":"main","schema_name":"evil","data_source_format":"DELTA"}]}`, `lists table "a" of main.evil among main.s's`},
		{"wrong type", `{"tables":"x"}`, "not a valid answer"},
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
		_, err := listClient(hs.URL, "t").ListTables(context.Background(), "main", "s")
		hs.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	oldMax := maxListed
	maxListed = 10
	t.Cleanup(func() { maxListed = oldMax })
	for i := range 20 {
		s.AddTable(fmt.Sprintf("main.s.t%d", i), "s3://b/t")
	}
	if _, err := c.ListTables(context.Background(), "main", "s"); err == nil || !strings.Contains(err.Error(), "more than 10 names") {
		t.Fatalf("too many: %v", err)
	}
	// Views and other formats are not tables deltafs serves.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"tables":[{"name":"v","table_type":"VIEW"},{"name":"p","data_source_format":"PARQUET"},{"name":"d","data_source_format":"DELTA"}]}`))
	}))
	defer hs.Close()
	if got, err := listClient(hs.URL, "t").ListTables(context.Background(), "main", "s"); err != nil || fmt.Sprint(got) != "[d]" {
		t.Fatalf("formats: %v %v", got, err)
	}
	// A refusal is the API's error.
	s2 := unitytest.Start(t, time.Hour, "k", "s")
	if _, err := listClient(s2.URL, "wrong").ListSchemas(context.Background(), "main"); err == nil || !IsDenied(err) {
		t.Fatalf("refused: %v", err)
	}
}
