package gcsstore

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	gcs "cloud.google.com/go/storage"

	"github.com/deltafs/deltafs/storage/remote"
)

// meter is the HTTP transport under authentication: it fails requests at
// once after Close and while the endpoint is down, bounds the requests in
// flight (a response holds its slot until its body is closed), counts
// requests by kind and object bytes received, attributes attempts to their
// operation, and tells the store's health (remote.Health) every attempt's
// outcome. It never looks at or logs headers (the Authorization header
// passes through it).
type meter struct {
	s    *Store
	next http.RoundTripper
}

// requestKind sorts a request of the JSON or XML API into the Stats
// counters; download tells object bytes (GET bodies of media).
func requestKind(r *http.Request) (kind remote.Kind, download bool) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodDelete:
		return remote.KindDelete, false
	case strings.HasPrefix(p, "/upload/") || r.Method == http.MethodPost || r.Method == http.MethodPut:
		return remote.KindPut, false
	case r.Method == http.MethodHead:
		return remote.KindHead, false
	case strings.HasPrefix(p, "/download/") || r.URL.Query().Get("alt") == "media":
		return remote.KindGet, true
	case strings.HasSuffix(p, "/o") || strings.HasSuffix(p, "/o/"):
		return remote.KindList, false
	case strings.Contains(p, "/storage/v1/b/"):
		return remote.KindHead, false // object or bucket metadata
	default:
		return remote.KindGet, true // XML API: /bucket/object
	}
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	s := m.s
	ctx := req.Context()
	op := remote.OpOf(ctx)
	probe := op != nil && op.Probe
	release, err := s.st.Admit(ctx, s.life, s.health, op, s.sem) // shouldRetry does not retry *Unreachable
	if err != nil {
		return nil, err
	}
	if op != nil {
		op.Attempts.Add(1)
	}
	kind, download := requestKind(req)
	s.st.Count(kind)
	s.health.Sending(req.URL)
	sent := time.Now()
	resp, err := m.next.RoundTrip(req)
	if err != nil {
		release()
		if ferr := s.attemptFailure(ctx, op, err); ferr != nil {
			s.health.Failed(sent, ferr)
			if herr := s.health.Check(); herr != nil && !probe {
				return nil, herr // down by now: no retry
			}
		}
		return resp, err
	}
	s.health.Answered()
	var bytes *atomic.Int64
	if download && resp.StatusCode < 300 {
		bytes = &s.st.Bytes
	}
	resp.Body = &remote.Body{ReadCloser: resp.Body, Release: release, Bytes: bytes}
	return resp, nil
}

// attemptFailure is a failed attempt's error as the health reads it, or
// nil when the attempt was abandoned (the caller's cancellation, the
// operation's bound, Close, the SDK closing a reader), which says nothing
// about the endpoint. The meter runs inside the http.Client: when the
// client's Timeout (RequestTimeout) cuts an attempt, the transport only
// sees its request cancelled ("request canceled", or its context's
// deadline, which the client set), and that is a remote.Timeout.
func (s *Store) attemptFailure(ctx context.Context, op *remote.Op, err error) error {
	if s.life.Err() != nil || op == nil || op.Ended() {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return remote.Timeout{Msg: err.Error()}
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// probe is one attempt of a one-key list of the table (ctx marks it as
// the probe; the meter records its outcome).
func (s *Store) probe(ctx context.Context) {
	it := s.bucket.Retryer(gcs.WithPolicy(gcs.RetryNever)).Objects(ctx, &gcs.Query{Prefix: s.prefix})
	it.PageInfo().MaxSize = 1
	_, _ = it.Next()
}

// Stats are a store's counters since it was opened (s3store's and
// azstore's too, so that tools read any).
type Stats = remote.Stats

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats { return s.st.Snapshot(s.pins.Len()) }

// Service names the store in a mount's statistics (remote.Reporter).
func (s *Store) Service() string { return "gcs" }
