package sharing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Pre-signed URLs that are stale as soon as they come (an expiry in the
// past), or that the file server refuses however fresh: the version is
// queried for fresh URLs once a second at most, not once per read. Each
// read used to query the version again (twice, for a refused URL).
func TestRenewalsBounded(t *testing.T) {
	const size = 100
	data := bytes.Repeat([]byte("x"), size)
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			h := startHostile(t)
			var queries atomic.Int64
			h.query = func(w http.ResponseWriter, r *http.Request) {
				queries.Add(1)
				line := fileLine("a", h.srv.URL+"/files/b/t/part-a.parquet", size)
				exp := time.Now().Add(-time.Hour).UnixMilli()
				line = strings.Replace(line, `"version":0,`, fmt.Sprintf(`"version":0,"expirationTimestamp":%d,`, exp), 1)
				io.WriteString(w, protocolLine+"\n"+metadataLine+"\n"+line+"\n")
			}
			h.files = func(w http.ResponseWriter, r *http.Request) {
				if refuse {
					http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
					return
				}
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
			}
			st, err := h.open(h.client(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			opened := queries.Load()
			start := time.Now()
			var last error
			for range 40 {
				got, err := storage.ReadRange(context.Background(), st, "part-a.parquet", 0, size)
				if !refuse && (err != nil || !bytes.Equal(got, data)) {
					t.Fatalf("read: %d bytes, %v", len(got), err)
				}
				if refuse && err == nil {
					t.Fatal("a refused URL read")
				}
				last = err
			}
			el := time.Since(start)
			n := queries.Load() - opened
			if max := int64(el/renewFloor) + 2; n > max {
				t.Errorf("%d queries for fresh URLs in %v of 40 reads, want %d at most", n, el.Round(time.Millisecond), max)
			}
			if refuse {
				checkLine(t, last, "part-a.parquet: ", "403", "(its URL was renewed less than 1s ago)")
			}
			t.Logf("%d queries in %v; %v", n, el.Round(time.Millisecond), last)
		})
	}
}
