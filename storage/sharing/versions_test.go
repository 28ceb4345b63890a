package sharing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// A server that claims a huge version must not make the open query every
// version (one query each): the latest maxVersions are served, the first
// as a checkpoint, and a jump of more than that between two looks fails
// the look. A version of 10^6 used to mean 10^6 queries at open; 2^63-1,
// a slice of that length.

// versioned is a sharing server at version *at whose query answers are
// the version asked for, with no files.
func versioned(t *testing.T, at *atomic.Int64, queries *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/version"):
			w.Header().Set("Delta-Table-Version", strconv.FormatInt(at.Load(), 10))
		case strings.HasSuffix(r.URL.Path, "/query"):
			queries.Add(1)
			var body struct{ Version *int64 }
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			v := at.Load()
			if body.Version != nil {
				v = *body.Version
			}
			w.Header().Set("Delta-Table-Version", strconv.FormatInt(v, 10))
			fmt.Fprintln(w, protocolLine)
			fmt.Fprintln(w, metadataLine)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVersionsBounded(t *testing.T) {
	for _, top := range []int64{1_000_000, math.MaxInt64} {
		t.Run(strconv.FormatInt(top, 10), func(t *testing.T) {
			var at, queries atomic.Int64
			at.Store(top)
			srv := versioned(t, &at, &queries)
			c := NewClient(Profile{Endpoint: srv.URL + "/api", BearerToken: "dss-secret-token"}, Name{Share: "s", Schema: "d", Table: "t"}, srv.Client(), time.Minute)
			c.maxVersions = 5
			var st *Store
			var err error
			testkit.Bounded(t, "open", 20*time.Second, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				st, err = newStore(ctx, "p.share#s.d.t", c, srv.Client(), slog.New(slog.DiscardHandler))
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := queries.Load(); n > 6 {
				t.Errorf("%d queries, want 5 (and the probe of the current version)", n)
			}
			if _, ok := st.objects[checkpointKey(top-4)]; !ok || len(st.objects) != 6 {
				t.Errorf("want a checkpoint of version %d and 5 commits, got %d objects", top-4, len(st.objects))
			}
			if top == math.MaxInt64 {
				return
			}
			// A jump of more than 5 versions fails the look, in one line.
			at.Store(top + 6)
			_, err = st.List(context.Background(), "_delta_log/", "")
			checkLine(t, err, fmt.Sprintf("the share's version went from %d to %d: more than 5 new versions at once", top, top+6))
			// 5 at once are read.
			at.Store(top + 5)
			if _, err := st.List(context.Background(), "_delta_log/", ""); err != nil {
				t.Fatal(err)
			}
		})
	}
}
