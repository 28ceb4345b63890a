package unity

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/storage"
)

// roundTrip is an http.RoundTripper of a function (no sockets: the
// fuzzer sends many thousand requests a second).
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzAnswers: whatever the catalog answers (status and body) to getTable
// and to the credentials' call, the client never panics, and every error
// it makes of the answer, and of the storage_location it gives, is one
// line without the token.
func FuzzAnswers(f *testing.F) {
	f.Add(200, []byte(`{"name":"t","storage_location":"s3://b/t","table_id":"x","data_source_format":"DELTA"}`))
	f.Add(200, []byte(`{"storage_location":"uc://main.default.t","table_id":"x"}`))
	f.Add(200, []byte(`{"storage_location":"bad\nscheme://x"}`))
	f.Add(200, []byte(`{"aws_temp_credentials":{"access_key_id":"k"},"expiration_time":-5}`))
	f.Add(401, []byte(`{"error_code":"UNAUTHENTICATED","message":"Invalid token Bearer dapi-secret"}`))
	f.Add(503, []byte(`not json`))
	f.Add(500, []byte(`{"error_code":"X\nY","message":"a\nb"}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 200 || status > 599 {
			return
		}
		cl := NewClient(Config{Endpoint: "http://uc.test", Token: "dapi-secret"})
		cl.Attempts = 1
		cl.http = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
		})}
		check := func(what string, err error) {
			if err == nil {
				return
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || len(msg) > 2000 {
				t.Fatalf("%s: not one bounded line: %q", what, msg)
			}
		}
		ti, err := cl.GetTable(context.Background(), "c.s.t")
		check("getTable", err)
		if err == nil {
			loc := normalizeLocation(ti.StorageLocation)
			if err := storage.CheckStorageLocation(loc); err != nil {
				check("storage_location", err)
			} else if strings.HasPrefix(loc, "uc://") {
				t.Fatalf("a catalog location passed as a storage location: %q", loc)
			}
		}
		tc, err := cl.TemporaryTableCredentials(context.Background(), "x")
		check("credentials", err)
		if err == nil {
			_, err := tc.Storage()
			check("credentials", err)
		}
	})
}
