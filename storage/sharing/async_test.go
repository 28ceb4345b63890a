package sharing

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// Asynchronous queries (asyncquery, Get Query Info) and answers in pages
// (endStreamAction.nextPageToken) give the same files as one synchronous
// answer; hostile ones fail in one line within a bound.

func fileIDs(r *Response) []string {
	var ids []string
	for _, f := range r.Files {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestAsyncQueryInPages(t *testing.T) {
	srv := sharingtest.Start(t, time.Minute)
	for _, name := range []string{"dat-basic_append", "golden-basic-with-inserts-deletes-checkpoint"} {
		srv.AddTable(t, "share", "default", strings.ReplaceAll(name, "-", "_"), "../../testdata/delta/"+name)
	}
	profile := filepath.Join(t.TempDir(), "p.share")
	srv.WriteProfile(t, profile, srv.Token)
	p, err := LoadProfile(profile, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"dat_basic_append", "golden_basic_with_inserts_deletes_checkpoint"} {
		c := NewClient(p, Name{Profile: profile, Share: "share", Schema: "default", Table: name}, http.DefaultClient, 10*time.Second)
		latest, err := c.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for v := int64(0); v <= latest; v++ {
			srv.SetAsync(0)
			srv.SetPageSize(0)
			want, err := c.Query(ctx, &v)
			if err != nil {
				t.Fatalf("%s version %d: %v", name, v, err)
			}
			srv.SetAsync(2)
			srv.SetPageSize(1)
			polls := srv.Polls.Load()
			got, err := c.Query(ctx, &v)
			if err != nil {
				t.Fatalf("%s version %d, asynchronous in pages of 1 file: %v", name, v, err)
			}
			if !slices.Equal(fileIDs(got), fileIDs(want)) || string(got.Metadata) != string(want.Metadata) || string(got.Protocol) != string(want.Protocol) || got.Version != want.Version {
				t.Errorf("%s version %d: asynchronous in pages %v (v%d), synchronous %v (v%d)", name, v, fileIDs(got), got.Version, fileIDs(want), want.Version)
			}
			if n := srv.Polls.Load() - polls; n < 3 {
				t.Errorf("%s version %d: %d polls, want the 2 pending ones and the answer", name, v, n)
			}
			srv.SetAsync(0) // pages of a synchronous answer
			if got, err = c.Query(ctx, &v); err != nil || !slices.Equal(fileIDs(got), fileIDs(want)) {
				t.Errorf("%s version %d, synchronous in pages: %v, %v", name, v, fileIDs(got), err)
			}
		}
	}
}

func TestAsyncQueryHostile(t *testing.T) {
	status := func(id, st, msg string) string {
		b, _ := json.Marshal(map[string]any{"queryStatus": map[string]any{"queryId": id, "status": st, "errorMessage": msg}})
		return string(b) + "\n"
	}
	page := func(next string) string {
		s := protocolLine + "\n" + metadataLine + "\n"
		if next != "" {
			s += `{"endStreamAction":{"nextPageToken":"` + next + `"}}` + "\n"
		}
		return s
	}
	cases := map[string]struct {
		submit, poll func(n int64) string // the answers of the n-th request
		want         string
	}{
		"pending forever": {func(int64) string { return status("q1", "pending", "") }, func(int64) string { return status("q1", "pending", "") }, "still pending after"},
		"failed, echoing the token": {func(int64) string { return status("q1", "pending", "") },
			func(int64) string { return status("q1", "failed", "no access for dss-secret-token\nat all") }, "failed the asynchronous query: no access for *** at all"},
		"an unknown status":        {func(int64) string { return status("q1", "running", "") }, nil, `status is "running"`},
		"no queryId":               {func(int64) string { return status("", "pending", "") }, nil, "no queryId"},
		"a status after the lines": {func(int64) string { return page("") + status("q1", "pending", "") }, nil, "a query status after other lines"},
		"lines after a status":     {func(int64) string { return status("q1", "pending", "") + protocolLine + "\n" }, nil, "follows its end"},
		"pages that loop":          {func(n int64) string { return page("t1") }, nil, "again (pages without end)"},
		"pages that alternate": {func(n int64) string {
			return page([]string{"t1", "t2"}[n%2])
		}, nil, "again (pages without end)"},
		"a status as a page": {func(n int64) string {
			if n == 0 {
				return page("t1")
			}
			return status("q1", "pending", "")
		}, nil, "is a query status"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := startHostile(t)
			var submits, polls atomic.Int64
			h.query = func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/queries/") {
					if !strings.HasSuffix(r.URL.Path, "/queries/q1") || tc.poll == nil {
						http.NotFound(w, r)
						return
					}
					_, _ = w.Write([]byte(tc.poll(polls.Add(1) - 1)))
					return
				}
				_, _ = w.Write([]byte(tc.submit(submits.Add(1) - 1)))
			}
			c := h.client(100 * time.Millisecond)
			start := time.Now()
			_, err := c.Query(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "dss-secret-token") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v, want one line saying %q", err, tc.want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("failed after %v", d)
			}
		})
	}
}
