package gcsstore

import (
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/deltafs/deltafs/storage/remote"
)

// meter is the HTTP transport under authentication: it fails requests at
// once after Close, bounds the requests in flight (a response holds its
// slot until its body is closed), counts requests by kind and object bytes
// received, and attributes attempts to their operation. It never looks at
// or logs headers (the Authorization header passes through it).
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
	if s.life.Err() != nil {
		return nil, remote.Closed{}
	}
	ctx := req.Context()
	release, err := s.st.Acquire(ctx, s.sem, s.life.Done())
	if err != nil {
		return nil, err
	}
	if st := remote.OpOf(ctx); st != nil {
		st.Attempts.Add(1)
	}
	kind, download := requestKind(req)
	s.st.Count(kind)
	resp, err := m.next.RoundTrip(req)
	if err != nil {
		release()
		return resp, err
	}
	var bytes *atomic.Int64
	if download && resp.StatusCode < 300 {
		bytes = &s.st.Bytes
	}
	resp.Body = &remote.Body{ReadCloser: resp.Body, Release: release, Bytes: bytes}
	return resp, nil
}

// Stats are a store's counters since it was opened (s3store's and
// azstore's too, so that tools read any).
type Stats = remote.Stats

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats { return s.st.Snapshot(s.pins.Len()) }
