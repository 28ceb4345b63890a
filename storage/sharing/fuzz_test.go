package sharing

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzQueryAnswer: whatever a sharing server answers to a query (and to
// the polls of an asynchronous one), the client gives a complete answer
// or one line of error, never a panic or a hang, and never a file twice.
func FuzzQueryAnswer(f *testing.F) {
	file := `{"file":{"id":"f1","deltaSingleAction":{"add":{"path":"https://x/f1","size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}}}`
	pfile := `{"file":{"id":"f2","url":"https://x/f2","size":3,"partitionValues":{"p":"1"},"stats":"{\"numRecords\":1}"}}`
	for _, seed := range []string{
		protocolLine + "\n" + metadataLine + "\n" + file + "\n",
		protocolLine + "\n" + metadataLine + "\n" + file + "\n" + `{"endStreamAction":{"nextPageToken":"t"}}` + "\n",
		`{"queryStatus":{"queryId":"q1","status":"pending"}}` + "\n",
		`{"queryStatus":{"queryId":"q1","status":"failed","errorMessage":"x"}}` + "\n",
		`{"protocol":{"minReaderVersion":1}}` + "\n" + `{"metaData":{"id":"m","format":{"provider":"parquet"},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[]}}` + "\n" + pfile + "\n",
		`{"endStreamAction":{"errorMessage":"boom"}}`,
		"{\"protocol\":{\"deltaProtocol\":[]}}\n\x00",
	} {
		f.Add([]byte(seed), []byte(seed))
	}
	h := startHostile(&testing.T{})
	var submit, poll atomic.Pointer[[]byte]
	h.query = func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/queries/") {
			_, _ = w.Write(*poll.Load())
			return
		}
		_, _ = w.Write(*submit.Load())
	}
	c := h.client(200 * time.Millisecond)
	f.Fuzz(func(t *testing.T, first, later []byte) {
		submit.Store(&first)
		poll.Store(&later)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := c.Query(ctx, nil)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") || len(err.Error()) > 4096 {
				t.Fatalf("error is not one bounded line: %q", err)
			}
			if ctx.Err() != nil {
				t.Fatalf("the query ran past its bound: %v", err)
			}
			return
		}
		if r.Protocol == nil || r.Metadata == nil {
			t.Fatal("an answer without protocol or metaData")
		}
		seen := map[string]bool{}
		for _, f := range r.Files {
			if seen[f.ID] || len(f.DeltaSingleAction) == 0 {
				t.Fatalf("file %q twice or without an action", f.ID)
			}
			seen[f.ID] = true
		}
	})
}

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
