package cloudtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Trap is the other origin of a redirect attack: a server on another port
// of 127.0.0.1 that answers every request 404 and keeps every credential
// it is sent (an Authorization header, an AWS session token header, a
// signature in the query), so that a test can assert that none reached it.
type Trap struct {
	URL      string       // http://127.0.0.1:port
	Requests atomic.Int64 // requests received

	mu    sync.Mutex
	creds []string
}

// NewTrap starts a trap; t.Cleanup stops it.
func NewTrap(t testing.TB) *Trap {
	tr := &Trap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.Requests.Add(1)
		var got []string
		for _, h := range []string{"Authorization", "X-Amz-Security-Token"} {
			if v := r.Header.Get(h); v != "" {
				got = append(got, h+": "+v)
			}
		}
		for k, vs := range r.URL.Query() {
			if k := strings.ToLower(k); k == "sig" || strings.HasSuffix(k, "signature") {
				got = append(got, k+"="+strings.Join(vs, ","))
			}
		}
		tr.mu.Lock()
		tr.creds = append(tr.creds, got...)
		tr.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	tr.URL = srv.URL
	return tr
}

// Credentials are the credentials the trap received.
func (tr *Trap) Credentials() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.creds...)
}

// Redirect answers r with a 307 to the same path at the trap (a hostile
// or misconfigured server sending its client elsewhere).
func (tr *Trap) Redirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, tr.URL+r.URL.EscapedPath(), http.StatusTemporaryRedirect)
}
