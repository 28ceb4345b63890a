package cloudtest

import (
	"net/http"
	"sync"
)

// ErrorSwitch is middleware that answers requests with an error of the
// cloud's own form (Answer: S3's 503 SlowDown, GCS's 429, Azure's 503
// ServerBusy...) instead of passing them to the server, as a throttling
// or failing service does: the next n requests after Set(n), or every
// request after Set(-1) until Set(0).
type ErrorSwitch struct {
	// Answer writes the error answer.
	Answer http.HandlerFunc

	mu   sync.Mutex
	left int64 // requests still to answer with the error; < 0: all
	hits int64 // requests answered with the error since the last Set
}

// Set answers the next n requests with the error (every request for
// n < 0, none for 0) and resets Hits.
func (s *ErrorSwitch) Set(n int64) {
	s.mu.Lock()
	s.left, s.hits = n, 0
	s.mu.Unlock()
}

// Hits is the number of requests answered with the error since the last
// Set.
func (s *ErrorSwitch) Hits() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// Wrap is the middleware.
func (s *ErrorSwitch) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hit := s.left != 0
		if s.left > 0 {
			s.left--
		}
		if hit {
			s.hits++
		}
		s.mu.Unlock()
		if hit {
			s.Answer(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
