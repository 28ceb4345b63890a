package gcsstore

import (
	"context"
	"errors"

	"golang.org/x/oauth2"

	"github.com/deltafs/deltafs/storage"
)

// vendedToken adapts a storage.CredentialSource (a catalog's vended
// credentials) to oauth2: the store installs it without
// oauth2.ReuseTokenSource, so every request carries the token the source
// holds now, with the expiry the source gave; a renewed token is used
// from the next request on.
type vendedToken struct {
	src storage.CredentialSource
	ctx context.Context // the store's life: oauth2 passes no request context
}

func (v vendedToken) Token() (*oauth2.Token, error) {
	c, err := v.src.Credentials(v.ctx)
	if err != nil {
		return nil, vendedError{err}
	}
	if c.GCPToken == "" {
		return nil, vendedError{errors.New("the catalog vended no GCP token for a gs:// table (" + c.String() + ")")}
	}
	return &oauth2.Token{AccessToken: c.GCPToken, TokenType: "Bearer", Expiry: c.Expires}, nil
}

// vendedError is a source's refusal: never retried (the source retried
// what it could), its message kept.
type vendedError struct{ error }

func (e vendedError) Unwrap() error      { return e.error }
func (vendedError) RetryableError() bool { return false }

// isVended reports whether err is a refusal of the credential source.
func isVended(err error) bool {
	var ve vendedError
	return errors.As(err, &ve)
}
