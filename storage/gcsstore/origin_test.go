package gcsstore_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/deltafs/deltafs/internal/cloudtest"
	"github.com/deltafs/deltafs/storage/gcsstore"
)

// Credentials stay at the endpoint's origin: an endpoint redirecting to
// another port of the same host fails the request with one line naming
// both origins, and the other origin never sees the OAuth token (the
// oauth2 transport sets Authorization on every request, redirected ones
// included, wherever they go).
func TestCredentialsStayAtOrigin(t *testing.T) {
	trap := cloudtest.NewTrap(t)
	endpoint := httptest.NewServer(http.HandlerFunc(trap.Redirect))
	defer endpoint.Close()
	o := testOptions(endpoint.URL)
	o.GCSOptions.Anonymous = false
	o.TokenSource = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.secret-oauth-token", TokenType: "Bearer"})
	o.MaxAttempts = 1
	st, err := gcsstore.NewWithOptions(ctxT(t), "gs://lake/t", o)
	if err == nil {
		defer st.Close()
		_, err = st.Stat(ctxT(t), "_delta_log/00000000000000000000.json")
	}
	if got := trap.Credentials(); len(got) != 0 {
		t.Fatalf("the other origin received %q", got)
	}
	want := endpoint.URL + " redirected to " + trap.URL
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v: want one line saying %s", err, want)
	}
	t.Log(err)
}
