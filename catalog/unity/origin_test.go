package unity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage/cloudtest"
)

// The token goes only to the catalog's origin: a catalog that redirects to
// another port of the same host, or from https to http, fails the call
// with one line naming both origins, and the other origin never sees the
// token (Go's client would forward it: it compares hosts, not ports, and
// ignores the scheme).
func TestTokenStaysAtOrigin(t *testing.T) {
	trap := cloudtest.NewTrap(t)
	uc := unitytest.Start(t, time.Minute, "admin", "admin-secret")
	uc.AddTable("main.default.t", "s3://lake/t")
	uc.RedirectTo(trap.Redirect)
	tls := httptest.NewTLSServer(http.HandlerFunc(trap.Redirect))
	defer tls.Close()
	for _, c := range []struct {
		name, endpoint string
		client         *http.Client // its transport, for the TLS server's certificate
	}{
		{"another port", uc.URL, nil},
		{"https to http", tls.URL, tls.Client()},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := NewClient(Config{Endpoint: c.endpoint, Token: uc.Token})
			if c.client != nil {
				cl.http.Transport = c.client.Transport
			}
			cl.Attempts = 1
			_, err := cl.GetTable(context.Background(), "main.default.t")
			if got := trap.Credentials(); len(got) != 0 {
				t.Fatalf("the other origin received %q", got)
			}
			from, to := c.endpoint, trap.URL
			if err == nil || !strings.Contains(err.Error(), from+" redirected to "+to) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v, want one line saying %s redirected to %s", err, from, to)
			}
			t.Log(err)
		})
	}
	if trap.Requests.Load() != 0 {
		t.Errorf("%d requests reached the other origin", trap.Requests.Load())
	}
}

// A catalog that echoes the request's token in its refusal: the message
// keeps the refusal, not the token.
func TestEchoedTokenRedacted(t *testing.T) {
	uc := unitytest.Start(t, time.Minute, "admin", "admin-secret")
	uc.EchoToken(true)
	_, err := NewClient(Config{Endpoint: uc.URL, Token: uc.Token}).GetTable(context.Background(), "main.default.t")
	if err == nil || strings.Contains(err.Error(), uc.Token) || !strings.Contains(err.Error(), "Invalid token Bearer "+secret.Mask) {
		t.Fatalf("%v: want the refusal without the token", err)
	}
}
