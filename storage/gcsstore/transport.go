package gcsstore

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// closedError fails the attempts of a closed store.
type closedError struct{}

func (closedError) Error() string { return "store closed" }

// requestKind sorts a request of the JSON or XML API into the Stats
// counters; download tells object bytes (GET bodies of media).
func requestKind(r *http.Request) (kind string, download bool) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodDelete:
		return "delete", false
	case strings.HasPrefix(p, "/upload/") || r.Method == http.MethodPost || r.Method == http.MethodPut:
		return "put", false
	case r.Method == http.MethodHead:
		return "head", false
	case strings.HasPrefix(p, "/download/") || r.URL.Query().Get("alt") == "media":
		return "get", true
	case strings.HasSuffix(p, "/o") || strings.HasSuffix(p, "/o/"):
		return "list", false
	case strings.Contains(p, "/storage/v1/b/"):
		return "head", false // object or bucket metadata
	default:
		return "get", true // XML API: /bucket/object
	}
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	s := m.s
	if s.life.Err() != nil {
		return nil, closedError{}
	}
	ctx := req.Context()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.life.Done():
		return nil, closedError{}
	}
	n := s.st.inFlight.Add(1)
	for {
		mx := s.st.maxInFlight.Load()
		if n <= mx || s.st.maxInFlight.CompareAndSwap(mx, n) {
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
	if st, _ := ctx.Value(opKey{}).(*opState); st != nil {
		st.attempts.Add(1)
	}
	kind, download := requestKind(req)
	switch kind {
	case "get":
		s.st.gets.Add(1)
	case "head":
		s.st.heads.Add(1)
	case "list":
		s.st.lists.Add(1)
	case "put":
		s.st.puts.Add(1)
	case "delete":
		s.st.deletes.Add(1)
	}
	resp, err := m.next.RoundTrip(req)
	if err != nil {
		release()
		return resp, err
	}
	var bytes *atomic.Int64
	if download && resp.StatusCode < 300 {
		bytes = &s.st.bytes
	}
	resp.Body = &meteredBody{ReadCloser: resp.Body, release: release, bytes: bytes}
	return resp, nil
}

// meteredBody counts the bytes read from a body and gives the request's
// concurrency slot back when it is closed.
type meteredBody struct {
	io.ReadCloser
	release func()
	bytes   *atomic.Int64
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.bytes != nil {
		b.bytes.Add(int64(n))
	}
	return n, err
}

func (b *meteredBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// counters are the live Stats.
type counters struct {
	gets, heads, lists, puts, deletes atomic.Int64
	retries, bytes, coalesced         atomic.Int64
	inFlight, maxInFlight             atomic.Int64
}

// Stats are a store's counters since it was opened (the field names are
// s3store.Stats', so that tools read either).
type Stats struct {
	// HTTP requests sent, by kind (Heads: object metadata); every attempt
	// counts.
	Gets, Heads, Lists, Puts, Deletes int64
	// Retries: attempts after the first of an operation (a read's body
	// reopened after a cut counts).
	Retries int64
	// BytesFetched: object bytes received in download bodies, including
	// the gaps read by coalescing and bodies of failed attempts.
	BytesFetched int64
	// RangesCoalesced: ranges of ReadRanges served by a read issued for
	// another range.
	RangesCoalesced int64
	// InFlight and MaxInFlight: requests holding a concurrency slot now
	// and at most so far.
	InFlight, MaxInFlight int64
	// Pinned: keys whose identity (generation, size) is pinned.
	Pinned int
}

// Requests is the total number of HTTP requests sent.
func (st Stats) Requests() int64 { return st.Gets + st.Heads + st.Lists + st.Puts + st.Deletes }

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	s.pinMu.RLock()
	n := len(s.pins)
	s.pinMu.RUnlock()
	c := &s.st
	return Stats{
		Gets: c.gets.Load(), Heads: c.heads.Load(), Lists: c.lists.Load(),
		Puts: c.puts.Load(), Deletes: c.deletes.Load(),
		Retries: c.retries.Load(), BytesFetched: c.bytes.Load(),
		RangesCoalesced: c.coalesced.Load(),
		InFlight:        c.inFlight.Load(), MaxInFlight: c.maxInFlight.Load(),
		Pinned: n,
	}
}
