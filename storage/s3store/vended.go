package s3store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deltafs/deltafs/storage"
)

// vendedAWS adapts a storage.CredentialSource (a catalog's vended
// credentials) to the SDK. The store installs it without the SDK's
// credentials cache, so every request is signed with what the source holds
// now: the source refreshes ahead of expiry, and a refreshed session is
// used from the next request on rather than when the SDK's cache would
// notice.
type vendedAWS struct{ src storage.CredentialSource }

func (v vendedAWS) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := v.src.Credentials(ctx)
	if err != nil {
		return aws.Credentials{}, vendedError{err}
	}
	if c.AWS == nil {
		return aws.Credentials{}, vendedError{errors.New("the catalog vended no AWS credentials for an s3:// table (" + c.String() + ")")}
	}
	return aws.Credentials{
		AccessKeyID:     c.AWS.AccessKeyID,
		SecretAccessKey: c.AWS.SecretAccessKey,
		SessionToken:    c.AWS.SessionToken,
		Source:          "catalog",
		CanExpire:       !c.Expires.IsZero(),
		Expires:         c.Expires,
	}, nil
}

// vendedError is a source's refusal: not retried (the source retried what
// it could), its message kept.
type vendedError struct{ error }

func (e vendedError) Unwrap() error        { return e.error }
func (e vendedError) RetryableError() bool { return false }
