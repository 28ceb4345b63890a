package sharing

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzQuery: whatever a sharing server answers to a query, on however
// many pages, Query returns within its bounds, never panics, and either
// fails with one line that holds no token, or gives an answer with a
// protocol, a metaData and files of unique ids. The input is the answer's
// pages, separated by NUL bytes; page i answers the i-th request (the last
// one every later request).
func FuzzQuery(f *testing.F) {
	f.Add([]byte(protocolLine + "\n" + metadataLine + "\n" + fileLine("a", "http://h/a.parquet", 5) + "\n"))
	f.Add([]byte(protocolLine + "\n" + metadataLine + "\n" + `{"endStreamAction":{"nextPageToken":"p"}}` + "\n\x00" + protocolLine + "\n" + metadataLine + "\n" + fileLine("b", "http://h/b.parquet", 5) + "\n"))
	f.Add([]byte(protocolLine + "\n" + metadataLine + "\n" + `{"endStreamAction":{"nextPageToken":"p"}}` + "\n"))
	f.Add([]byte(`{"protocol":{"minReaderVersion":1}}` + "\n" + `{"metaData":{"id":"x","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[]}}` + "\n"))
	f.Add([]byte(`{"endStreamAction":{"errorMessage":"dss-secret-token"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		pages, calls := bytes.Split(body, []byte{0}), 0
		// In memory, no sockets: the fuzzer runs many thousand queries a
		// second.
		hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			page := pages[min(calls, len(pages)-1)]
			calls++
			return &http.Response{StatusCode: 200, Header: http.Header{"Delta-Table-Version": {"0"}}, Body: io.NopCloser(bytes.NewReader(page)), Request: r}, nil
		})}
		c := NewClient(Profile{Endpoint: "http://sharing.test", BearerToken: "dss-secret-token"}, Name{Share: "s", Schema: "d", Table: "t"}, hc, 2*time.Second)
		c.maxPages, c.maxBody, c.maxLine = 8, 1<<20, 64<<10
		start := time.Now()
		r, err := c.Query(context.Background(), nil)
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("Query took %v", el)
		}
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "dss-secret-token") || len(msg) > 2000 {
				t.Fatalf("not one clean line: %q", msg)
			}
			return
		}
		if r.Protocol == nil || r.Metadata == nil {
			t.Fatal("an answer without protocol or metaData")
		}
		ids := map[string]bool{}
		for _, f := range r.Files {
			if f.ID == "" || ids[f.ID] || len(f.DeltaSingleAction) == 0 {
				t.Fatalf("file %q: empty, twice or without an action", f.ID)
			}
			ids[f.ID] = true
		}
	})
}

// roundTrip is an http.RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzProfile: any profile file loads or fails in one line that shows
// none of its secrets.
func FuzzProfile(f *testing.F) {
	for _, seed := range []string{
		`{"shareCredentialsVersion":1,"endpoint":"https://s/ds","bearerToken":"tok-0123456789"}`,
		`{"shareCredentialsVersion":2,"type":"oauth_client_credentials","endpoint":"https://s/ds","tokenEndpoint":"https://t/token","clientId":"id","clientSecret":"sec-0123456789"}`,
		`{"shareCredentialsVersion":1,"endpoint":"https://s/ds","bearerToken":"tok-0123456789","expirationTime":"2020-01-01T00:00:00Z"}`,
		`{"shareCredentialsVersion":2,"type":"basic"}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "p.share")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := LoadProfile(path, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		if err == nil {
			if p.Endpoint == "" || (p.Type != typeOAuth && p.BearerToken == "") {
				t.Fatalf("a profile without endpoint or credentials loaded: %+v", p)
			}
			return
		}
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("error is not one line: %q", msg)
		}
		var given Profile // the secrets the file holds, if it parses at all
		_ = json.Unmarshal(b, &given)
		for _, secret := range []string{given.BearerToken, given.ClientSecret} {
			if len(secret) >= 8 && strings.Contains(msg, secret) {
				t.Fatalf("error shows a secret: %q", msg)
			}
		}
	})
}

// FuzzListing: whatever a sharing server answers to a listing, on however
// many pages, ListTables returns within its bounds, never panics, and
// either fails with one line that holds no token, or gives the items'
// names, none empty; each name either makes a location that names that
// very table back (Browser.Table) or is refused. The input is the pages,
// separated by NUL bytes, as FuzzQuery's.
func FuzzListing(f *testing.F) {
	f.Add([]byte(`{"items":[{"name":"a","share":"s","schema":"d"},{"name":"b"}]}`))
	f.Add([]byte(`{"items":[{"name":"a"}],"nextPageToken":"p1"}` + "\x00" + `{"items":[{"name":"x.y"},{"name":"../z"}]}`))
	f.Add([]byte(`{"items":[],"nextPageToken":"same"}`))
	f.Add([]byte(`{"items":[{"name":"t","schema":"other"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		pages, calls := bytes.Split(body, []byte{0}), 0
		hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			page := pages[min(calls, len(pages)-1)]
			calls++
			return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(page)), Request: r}, nil
		})}
		c := NewClient(Profile{Endpoint: "http://sharing.test", BearerToken: "dss-secret-token"}, Name{}, hc, 2*time.Second)
		start := time.Now()
		names, err := c.ListTables(context.Background(), "s", "d")
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("ListTables took %v", el)
		}
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "dss-secret-token") || len(msg) > 2000 {
				t.Fatalf("not one clean line: %q", msg)
			}
			return
		}
		b := &Browser{location: "p.share#s", profile: "p.share", share: "s", c: c}
		for _, n := range names {
			if n == "" {
				t.Fatal("an empty name")
			}
			loc, err := b.Table([]string{"d", n})
			if err != nil {
				continue
			}
			got, perr := ParseLocation(loc)
			if perr != nil || got.Share != "s" || got.Schema != "d" || got.Table != n {
				t.Fatalf("%q names %+v (%v), not table %q", loc, got, perr, n)
			}
		}
	})
}
