package s3store

import (
	"context"
	"net/http"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"

	"github.com/deltafs/deltafs/storage/remote"
)

// opState follows one logical operation (with its retries) through the
// SDK down to the HTTP client, which counts its attempts and says what is
// being retried; Probe marks the health probe, sent while the endpoint is
// down.
type opState = remote.Op

// withOp starts an operation: its context carries the opState and is
// cancelled when the store is closed, so that nothing in flight (an
// attempt, a body being read, a backoff) outlives Close. done releases it.
func (s *Store) withOp(ctx context.Context, op, key string) (context.Context, *opState, func()) {
	return remote.WithOp(ctx, s.life, op, key, 0)
}

// httpClient is the SDK's HTTP client: it bounds the requests in flight,
// counts them, attributes attempts to their operation, keeps the store's
// health (see health) and fails attempts at once while the endpoint is
// down or after Close.
type httpClient struct {
	s *Store
	c *http.Client
}

// opKinds sorts the SDK's operations into the Stats counters; any other
// is KindOther.
var opKinds = map[string]remote.Kind{
	"GetObject":     remote.KindGet,
	"HeadObject":    remote.KindHead,
	"ListObjectsV2": remote.KindList,
	"PutObject":     remote.KindPut,
	"DeleteObject":  remote.KindDelete,
}

func (h *httpClient) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	s := h.s
	st := remote.OpOf(ctx)
	if st == nil {
		st = &opState{Op: awsmiddleware.GetOperationName(ctx)}
	}
	release, err := s.st.Admit(ctx, s.life, s.health, st, s.sem)
	if err != nil {
		return nil, err
	}

	s.st.Count(opKinds[awsmiddleware.GetOperationName(ctx)])
	s.health.Attempt(st, s.opts.MaxAttempts)
	s.health.Sending(req.URL)

	sent := time.Now()
	var watch *time.Timer
	if s.opts.SlowAnswer > 0 && s.opts.SlowAnswer < s.opts.RequestTimeout && !st.Probe {
		watch = time.AfterFunc(s.opts.SlowAnswer, func() {
			s.health.Notice("s3: no answer from the endpoint yet; still waiting", "op", st.Op, "key", st.Key,
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
			if herr := s.health.AttemptFailed(st, sent, err, describe); herr != nil {
				return nil, herr // down by now: no SDK retries it
			}
		}
		return resp, err
	}
	s.health.Answered()
	if resp.StatusCode >= 300 {
		st.SetCause("HTTP " + resp.Status)
	}
	resp.Body = &remote.Body{ReadCloser: resp.Body, Release: release}
	return resp, nil
}
