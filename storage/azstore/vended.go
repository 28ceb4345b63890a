package azstore

import (
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/deltafs/deltafs/storage"
)

// vendedSAS is a per-retry policy of the SDK's pipeline that appends the
// SAS a catalog vends (storage.CredentialSource) to each attempt's query.
// It asks the source on every attempt, so a renewed SAS is used from the
// next request on; the client itself holds no credential. The retry
// policy clones the request for each attempt, so SAS parameters never
// accumulate across retries.
type vendedSAS struct{ src storage.CredentialSource }

func (v vendedSAS) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	c, err := v.src.Credentials(r.Context())
	if err != nil {
		return nil, vendedError{err}
	}
	if c.AzureSAS == "" {
		return nil, vendedError{errors.New("the catalog vended no Azure SAS for an Azure table (" + c.String() + ")")}
	}
	sas := c.AzureSAS
	if len(sas) > 0 && sas[0] == '?' {
		sas = sas[1:]
	}
	if r.URL.RawQuery == "" {
		r.URL.RawQuery = sas
	} else {
		r.URL.RawQuery += "&" + sas
	}
	return req.Next()
}

// vendedError is a source's refusal: never retried (the source retried
// what it could; NonRetriable stops the SDK's retries, get's own check
// its GET retries), its message kept.
type vendedError struct{ error }

func (e vendedError) Unwrap() error      { return e.error }
func (vendedError) NonRetriable()        {}
func (vendedError) RetryableError() bool { return false }

// isVended reports whether err is a refusal of the credential source.
func isVended(err error) bool {
	var ve vendedError
	return errors.As(err, &ve)
}
