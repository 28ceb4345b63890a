package azstore

import (
	"context"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage/remote"
)

// opState follows one logical operation (with its retries) through the
// SDK's pipeline down to the transport, which counts its attempts and
// says what is being retried.
type opState = remote.Op

// withOp starts an operation: its context carries the opState and is
// cancelled when the store is closed, so that nothing in flight (an
// attempt, a body being read, a backoff) outlives Close.
func (s *Store) withOp(ctx context.Context, op, key string) (context.Context, *opState, func()) {
	return remote.WithOp(ctx, s.life, op, key, 0)
}

// httpClient is the SDK's transport (policy.Transporter): it bounds the
// requests in flight, bounds each attempt (http.Client.Timeout covers
// sending the request to reading the last byte of the body), counts
// requests and attempts, logs retries, keeps the store's health (see
// remote.Health: every attempt's outcome) and fails attempts at once while
// the endpoint is down or after Close. It never logs a URL: a SAS token
// travels in the query.
type httpClient struct {
	s *Store
	c *http.Client
}

// requestKind sorts a Blob service request into the Stats counters.
func requestKind(req *http.Request) remote.Kind {
	switch q := req.URL.Query(); {
	case req.Method == http.MethodGet && q.Get("comp") == "list":
		return remote.KindList
	case req.Method == http.MethodGet && q.Get("comp") == "" && q.Get("restype") == "":
		return remote.KindGet
	case req.Method == http.MethodHead:
		return remote.KindHead
	case req.Method == http.MethodPut:
		return remote.KindPut
	case req.Method == http.MethodDelete:
		return remote.KindDelete
	default:
		return remote.KindOther
	}
}

func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	s := h.s
	if h.c == nil {
		h.c = &http.Client{Transport: s.transport, Timeout: s.opts.RequestTimeout, CheckRedirect: secret.CheckRedirectAll}
	}
	ctx := req.Context()
	st := remote.OpOf(ctx)
	if st == nil {
		st = &opState{Op: req.Method}
	}
	// Down: fail at once, NonRetriable, so the SDK's retry policy does
	// not retry either.
	release, err := s.st.Admit(ctx, s.life, s.health, st, s.sem)
	if err != nil {
		return nil, err
	}
	s.st.Count(requestKind(req))
	s.health.Attempt(st, s.opts.MaxAttempts)
	s.health.Sending(req.URL)
	sent := time.Now()
	resp, err := h.c.Do(req)
	if err != nil {
		release()
		if ctx.Err() == nil { // not the caller's cancellation, nor Close
			if herr := s.health.AttemptFailed(st, sent, err, func(err error) string { return secret.Redact(describe(err)) }); herr != nil {
				return nil, herr // down by now: no retry
			}
		}
		return resp, err
	}
	s.health.Answered()
	if resp.StatusCode >= 300 {
		c := "HTTP " + resp.Status
		if code := resp.Header.Get("x-ms-error-code"); code != "" {
			c += " " + code
		}
		st.SetCause(c)
	}
	resp.Body = &remote.Body{ReadCloser: resp.Body, Release: release}
	return resp, nil
}

// probe is one attempt of a one-key list of the table (ctx marks it as
// the probe; httpClient.Do records its outcome).
func (s *Store) probe(ctx context.Context) {
	o := &container.ListBlobsFlatOptions{MaxResults: to.Ptr(int32(1))}
	if p := s.where.Prefix; p != "" {
		o.Prefix = &p
	}
	_, _ = s.client.NewListBlobsFlatPager(o).NextPage(policy.WithRetryOptions(ctx, noRetry))
}
