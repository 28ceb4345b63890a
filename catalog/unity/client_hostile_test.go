package unity

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A catalog server that answers badly fails the call with one line in the
// API's terms, within a bound: an endless answer, a cut one, wrong JSON
// types, an answer that never comes, a server that closes the connection.
func TestClientHostileAnswers(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"endless", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"name":"`))
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for i := 0; i < 64; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "longer than 16 MiB"},
		{"cut", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"name":"t","storage_loc`)) }, "not a valid answer: not JSON"},
		{"wrong types", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"name":"t","storage_location":42}`))
		}, "storage_location is a JSON number, not a string"},
		{"not an object", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`[1,2]`)) }, "a JSON array, not an object"},
		{"silent", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, "no answer within 500ms, after 2 attempts"},
		{"trickle", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"name":"`))
			for {
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
			}
		}, "the answer did not come whole within 500ms, after 2 attempts"},
		{"hangs up", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, "EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			cl := NewClient(Config{Endpoint: srv.URL, Token: "dapi-secret"})
			cl.http.Timeout = 500 * time.Millisecond
			cl.Attempts = 2
			start := time.Now()
			_, err := cl.GetTable(context.Background(), "c.s.t")
			el := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "dapi-secret") || strings.Contains(msg, "Go struct") || len(msg) > 600 {
				t.Fatalf("not one clean line: %q", msg)
			}
			if el > 8*time.Second {
				t.Fatalf("failed after %v", el)
			}
			t.Logf("%v: %v", el.Round(time.Millisecond), err)
		})
	}
}
