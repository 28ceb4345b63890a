package unity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	_ "github.com/deltafs/deltafs/storage/azstore"
	_ "github.com/deltafs/deltafs/storage/gcsstore"
	_ "github.com/deltafs/deltafs/storage/s3store"
	_ "github.com/deltafs/deltafs/storage/sharing"
)

// ucOptions points a catalog client at uc (and at no configuration file).
func ucOptions(t *testing.T, uc *unitytest.Server) storage.Options {
	cleanEnv(t)
	return storage.Options{Catalog: storage.CatalogOptions{Endpoint: uc.URL, Token: uc.Token}}
}

// TestOpenLocationNotStorage: a table whose storage_location is not the
// place of its files (the table itself by uc://, another catalog table, a
// share, a scheme no backend reads, a relative path) is refused at once
// with one line naming the table and the location. uc:// pointing at
// itself used to open itself until the memory ran out.
func TestOpenLocationNotStorage(t *testing.T) {
	uc := unitytest.Start(t, time.Hour, "k", "s")
	opts := ucOptions(t, uc)
	uc.AddTable("main.default.other", "s3://lake/t")
	for name, loc := range map[string]string{
		"self":      "uc://main.default.self",
		"other":     "uc://main.default.other",
		"loop_a":    "uc://main.default.loop_b",
		"loop_b":    "uc://main.default.loop_a",
		"share":     "/etc/p.share#s.d.t",
		"hdfs":      "hdfs://namenode/warehouse/t",
		"relative":  "warehouse/t",
		"filerel":   "file://warehouse/t",
		"empty_sch": "://x",
		"newline":   "bad\nscheme://x",
	} {
		uc.AddTable("main.default."+name, loc)
	}
	for _, name := range []string{"self", "other", "loop_a", "share", "hdfs", "relative", "filerel", "empty_sch", "newline"} {
		t.Run(name, func(t *testing.T) {
			table := "uc://main.default." + name
			var err error
			start := time.Now()
			testkit.Bounded(t, "open "+table, 10*time.Second, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				defer cancel()
				var st storage.Storage
				if st, err = Open(ctx, table, opts); st != nil {
					st.(*Table).Close()
				}
			})
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, table+": the catalog's storage_location ") || !strings.Contains(msg, "refused") || strings.ContainsAny(msg, "\n\r") || len(msg) > 400 {
				t.Fatalf("%q, want one line naming the table and the location", msg)
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("refused after %v", time.Since(start))
			}
			t.Log(msg)
		})
	}
}

// TestOpenLocationLocal: a local table's location may be given as an
// absolute path, file:///path or Hadoop's file:/path.
func TestOpenLocationLocal(t *testing.T) {
	uc := unitytest.Start(t, time.Hour, "k", "s")
	opts := ucOptions(t, uc)
	dir := filepath.Join(testkit.Tables(), "dat-basic_append")
	for name, loc := range map[string]string{"abs": dir, "url": "file://" + dir, "hadoop": "file:" + dir} {
		uc.AddTable("main.default."+name, loc)
		st, err := Open(context.Background(), "uc://main.default."+name, opts)
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if _, err := st.Stat(context.Background(), "_delta_log/00000000000000000000.json"); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
		st.(*Table).Close()
	}
}

// TestOpenHostileCatalog: a catalog that accepts the request and never
// answers, or answers without end, fails the open within the bound with
// one line naming the bound (the limits made small for the test).
func TestOpenHostileCatalog(t *testing.T) {
	oldTimeout, oldPause := callTimeout, retryPause
	retryPause = 10 * time.Millisecond
	defer func() { callTimeout, retryPause = oldTimeout, oldPause }()
	for _, tc := range []struct {
		name    string
		set     func(*unitytest.Server)
		timeout time.Duration // of one attempt: 16 MiB come well within it
		want    string
		reqs    int64
	}{
		{"silent", func(uc *unitytest.Server) { uc.SetStall(true) }, 300 * time.Millisecond, "no answer within 300ms, after 4 attempts", 4},
		{"endless", func(uc *unitytest.Server) { uc.SetEndless(true) }, 5 * time.Second, "the answer is longer than 16 MiB", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callTimeout = tc.timeout
			uc := unitytest.Start(t, time.Hour, "k", "s")
			uc.AddTable("main.default.t", "s3://lake/t")
			opts := ucOptions(t, uc)
			tc.set(uc)
			start := time.Now()
			var err error
			testkit.Bounded(t, "open", 10*time.Second, func() {
				_, err = Open(context.Background(), "uc://main.default.t", opts)
			})
			el := time.Since(start)
			if err == nil || !strings.HasPrefix(err.Error(), "uc://main.default.t: looking up the table at "+uc.URL) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v, want one line naming the table and %q", err, tc.want)
			}
			if n := uc.Requests.Load(); n != tc.reqs {
				t.Errorf("%d requests, want %d", n, tc.reqs)
			}
			if el > 3*time.Second {
				t.Errorf("failed after %v", el)
			}
			t.Logf("%v: %v", el.Round(time.Millisecond), err)
		})
	}
}

// TestOpenNotDelta: a table of another format is refused in one line,
// whatever the catalog calls the format.
func TestOpenNotDelta(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"t","data_source_format":"PARQUET\nand more","storage_location":"s3://b/t","table_id":"x"}`))
	}))
	defer srv.Close()
	cleanEnv(t)
	_, err := Open(context.Background(), "uc://a.b.t", storage.Options{Catalog: storage.CatalogOptions{Endpoint: srv.URL, Token: "dapi-x"}})
	if err == nil || err.Error() != `uc://a.b.t: not a Delta table (data_source_format "PARQUET\nand more")` {
		t.Fatalf("%v", err)
	}
}
