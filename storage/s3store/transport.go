package s3store

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

// opState follows one logical operation (with its retries) through the
// SDK down to the HTTP client, which counts its attempts.
type opState struct {
	attempts atomic.Int64
}

type opKey struct{}

func withOp(ctx context.Context) (context.Context, *opState) {
	st := &opState{}
	return context.WithValue(ctx, opKey{}, st), st
}

// httpClient is the SDK's HTTP client: it bounds the requests in flight,
// counts them, and attributes attempts to their operation.
type httpClient struct {
	s *Store
	c *http.Client
}

func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	s := h.s
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	n := s.st.inFlight.Add(1)
	for {
		m := s.st.maxInFlight.Load()
		if n <= m || s.st.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			s.st.inFlight.Add(-1)
			<-s.sem
		})
	}

	switch op := awsmiddleware.GetOperationName(ctx); op {
	case "GetObject":
		s.st.gets.Add(1)
	case "HeadObject":
		s.st.heads.Add(1)
	case "ListObjectsV2":
		s.st.lists.Add(1)
	case "PutObject":
		s.st.puts.Add(1)
	case "DeleteObject":
		s.st.deletes.Add(1)
	default:
		s.st.other.Add(1)
	}
	if st, ok := ctx.Value(opKey{}).(*opState); ok {
		st.attempts.Add(1)
	}

	resp, err := h.c.Do(req)
	if err != nil {
		release()
		return resp, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody gives the request's concurrency slot back when the body is
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
