package storage

import (
	"context"
	"time"
)

// Credentials are short-lived cloud credentials that a catalog vends for
// one table (Unity Catalog's temporary table credentials): exactly one of
// AWS, AzureSAS and GCPToken is set. They are secrets: never log them, and
// never put them in an error; String and LogValue print only which cloud
// and the expiry.
type Credentials struct {
	AWS      *AWSCredentials // S3: a session (access key, secret, token)
	AzureSAS string          // Azure: a user delegation SAS token (query string, no leading '?')
	GCPToken string          // GCS: an OAuth 2.0 access token
	Expires  time.Time       // when the server stops accepting them
}

// AWSCredentials are an AWS session.
type AWSCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// String says which cloud and until when, never the secret.
func (c Credentials) String() string {
	kind := "no"
	switch {
	case c.AWS != nil:
		kind = "AWS session"
	case c.AzureSAS != "":
		kind = "Azure SAS"
	case c.GCPToken != "":
		kind = "GCP OAuth token"
	}
	return kind + " credentials valid until " + c.Expires.UTC().Format(time.RFC3339)
}

// CredentialSource hands a backend the credentials to use now. A backend
// given one (Options.Credentials) asks it before every request (the
// source caches and refreshes them ahead of their expiry, so the call is
// cheap) and uses nothing else: not the cloud's default chain, not
// anonymous access. An error fails that request: the backend must not
// retry it (the source already retried what could be retried) and must
// keep its message, which says why (a revoked grant, say).
//
// Backends take it as follows, each asking the source afresh for every
// request and using nothing of the environment: s3store as an
// aws.CredentialsProvider that is not cached by the SDK
// (s3store.vendedAWS); azstore as a per-retry policy of the azblob
// pipeline that appends the SAS to each attempt's query
// (azstore.vendedSAS; the client holds no credential); gcsstore as an
// oauth2.TokenSource giving the token with the source's expiry, not
// wrapped in oauth2.ReuseTokenSource (gcsstore.vendedToken). A source's
// error is not retried by the SDK or the backend and its message is the
// reason of the backend's one-line error. No backend follows a redirect
// to another origin (internal/secret.CheckRedirectAll): credentials, vended
// or not, go only to the endpoint they are for.
type CredentialSource interface {
	Credentials(ctx context.Context) (Credentials, error)
}
