package gcsstore_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// vended is a catalog's credential source handing out one OAuth token.
type vended struct{}

func (vended) Credentials(context.Context) (storage.Credentials, error) {
	return storage.Credentials{GCPToken: "ya29.vended-oauth-token", Expires: time.Now().Add(time.Hour)}, nil
}

// TestCredentialsStayAtOrigin: the OAuth token, from a token source or
// vended, never follows a redirect to another port of the same host (the
// oauth2 transport sets Authorization on every request, redirected ones
// included, wherever they go).
func TestCredentialsStayAtOrigin(t *testing.T) {
	storagetest.RunRedirect(t, map[string]func(*testing.T, string) (storage.Storage, error){
		"token source": func(t *testing.T, endpoint string) (storage.Storage, error) {
			o := testOptions(endpoint)
			o.GCSOptions.Anonymous = false
			o.TokenSource = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.secret-oauth-token", TokenType: "Bearer"})
			o.MaxAttempts = 1
			return gcsstore.New(ctxT(t), "gs://lake/t", o)
		},
		"vended": func(t *testing.T, endpoint string) (storage.Storage, error) {
			return storage.Open(ctxT(t), "gs://lake/t", storage.Options{Credentials: vended{},
				GCS: storage.GCSOptions{Endpoint: endpoint, RemoteOptions: storage.RemoteOptions{MaxAttempts: 1}}})
		},
	})
}
