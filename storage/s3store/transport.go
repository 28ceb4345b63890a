package s3store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

// opState follows one logical operation (with its retries) through the
// SDK down to the HTTP client, which counts its attempts and says what is
// being retried.
type opState struct {
	op, key  string // for messages
	probe    bool   // the health probe: sent while the endpoint is down
	attempts atomic.Int64
	cause    atomic.Pointer[string] // why the latest attempt failed, in words
}

func (st *opState) setCause(c string) { st.cause.Store(&c) }

type opKey struct{}

// withOp starts an operation: its context carries the opState and is
// cancelled when the store is closed, so that nothing in flight (an
// attempt, a body being read, a backoff) outlives Close. done releases it.
func (s *Store) withOp(ctx context.Context, op, key string) (context.Context, *opState, func()) {
	st := &opState{op: op, key: key}
	octx, cancel := context.WithCancel(context.WithValue(ctx, opKey{}, st))
	stop := context.AfterFunc(s.life, cancel)
	return octx, st, func() { stop(); cancel() }
}

// httpClient is the SDK's HTTP client: it bounds the requests in flight,
// counts them, attributes attempts to their operation, keeps the store's
// health (see health) and fails attempts at once while the endpoint is
// down or after Close.
type httpClient struct {
	s *Store
	c *http.Client
}

// closedError fails the attempts of a closed store.
type closedError struct{}

func (closedError) Error() string        { return "store closed" }
func (closedError) RetryableError() bool { return false }

func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	s := h.s
	st, _ := ctx.Value(opKey{}).(*opState)
	if st == nil {
		st = &opState{op: awsmiddleware.GetOperationName(ctx)}
	}
	if s.life.Err() != nil {
		return nil, closedError{}
	}
	if !st.probe {
		if err := s.health.check(); err != nil {
			return nil, err
		}
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
	if a := st.attempts.Add(1); a > 1 && !st.probe {
		cause := "unknown"
		if c := st.cause.Load(); c != nil {
			cause = *c
		}
		s.health.notice("s3: a request failed; retrying", "op", st.op, "key", st.key,
			"attempt", fmt.Sprintf("%d of %d", a, s.opts.MaxAttempts), "cause", cause)
	}
	s.health.sending(req.URL.Scheme + "://" + req.URL.Host)

	sent := time.Now()
	var watch *time.Timer
	if s.opts.SlowAnswer > 0 && s.opts.SlowAnswer < s.opts.RequestTimeout && !st.probe {
		watch = time.AfterFunc(s.opts.SlowAnswer, func() {
			s.health.notice("s3: no answer from the endpoint yet; still waiting", "op", st.op, "key", st.key,
				"endpoint", req.URL.Scheme+"://"+req.URL.Host, "waited", s.opts.SlowAnswer.String(),
				"attempt_timeout", s.opts.RequestTimeout.String())
		})
	}
	resp, err := h.c.Do(req)
	if watch != nil {
		watch.Stop()
	}
	if err != nil {
		release()
		if ctx.Err() == nil { // not the caller's cancellation, nor Close
			cause, endpoint := s.endpointFailure(err)
			if endpoint {
				s.health.failed(sent, cause)
			} else {
				cause = describe(err)
			}
			st.setCause(cause)
		}
		return resp, err
	}
	s.health.answered()
	if resp.StatusCode >= 300 {
		st.setCause("HTTP " + resp.Status)
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
