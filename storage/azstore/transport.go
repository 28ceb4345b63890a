package azstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// opState follows one logical operation (with its retries) through the
// SDK's pipeline down to the transport, which counts its attempts and
// says what is being retried.
type opState struct {
	op, key  string
	attempts atomic.Int64
	cause    atomic.Pointer[string] // why the latest attempt failed, in words
}

func (st *opState) setCause(c string) { st.cause.Store(&c) }

type opKey struct{}

// withOp starts an operation: its context carries the opState and is
// cancelled when the store is closed, so that nothing in flight (an
// attempt, a body being read, a backoff) outlives Close.
func (s *Store) withOp(ctx context.Context, op, key string) (context.Context, *opState, func()) {
	st := &opState{op: op, key: key}
	octx, cancel := context.WithCancel(context.WithValue(ctx, opKey{}, st))
	stop := context.AfterFunc(s.life, cancel)
	return octx, st, func() { stop(); cancel() }
}

// httpClient is the SDK's transport (policy.Transporter): it bounds the
// requests in flight, bounds each attempt (http.Client.Timeout covers
// sending the request to reading the last byte of the body), counts
// requests and attempts, and logs retries. It never logs a URL: a SAS
// token travels in the query.
type httpClient struct {
	s *Store
	c *http.Client
}

// closedError fails the attempts of a closed store.
type closedError struct{}

func (closedError) Error() string        { return "store closed" }
func (closedError) NonRetriable()        {}
func (closedError) RetryableError() bool { return false }

func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	s := h.s
	if h.c == nil {
		h.c = &http.Client{Transport: s.transport, Timeout: s.opts.RequestTimeout}
	}
	ctx := req.Context()
	st, _ := ctx.Value(opKey{}).(*opState)
	if st == nil {
		st = &opState{op: req.Method}
	}
	if s.life.Err() != nil {
		return nil, closedError{}
	}
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
	switch q := req.URL.Query(); {
	case req.Method == http.MethodGet && q.Get("comp") == "list":
		s.st.lists.Add(1)
	case req.Method == http.MethodGet && q.Get("comp") == "" && q.Get("restype") == "":
		s.st.gets.Add(1)
	case req.Method == http.MethodHead:
		s.st.heads.Add(1)
	case req.Method == http.MethodPut:
		s.st.puts.Add(1)
	case req.Method == http.MethodDelete:
		s.st.deletes.Add(1)
	default:
		s.st.other.Add(1)
	}
	if a := st.attempts.Add(1); a > 1 {
		cause := "unknown"
		if c := st.cause.Load(); c != nil {
			cause = *c
		}
		s.notice("azure: a request failed; retrying", "op", st.op, "key", st.key,
			"attempt", fmt.Sprintf("%d of %d", a, s.opts.MaxAttempts), "cause", cause)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		release()
		if ctx.Err() == nil {
			st.setCause(s.redact(describe(err)))
		}
		return resp, err
	}
	if resp.StatusCode >= 300 {
		c := "HTTP " + resp.Status
		if code := resp.Header.Get("x-ms-error-code"); code != "" {
			c += " " + code
		}
		st.setCause(c)
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
