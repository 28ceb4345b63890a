package unitytest

import (
	"bytes"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A catalog that misbehaves, for tests of the client's bounds: it vends
// credentials that are dead on arrival, fails renewals, accepts requests
// and never answers them, or answers without end. Requests and
// VendRequests count what the client sent.
type hostile struct {
	Requests     atomic.Int64 // API requests received
	VendRequests atomic.Int64 // of them, POST /temporary-table-credentials

	vendLifetime atomic.Int64 // != 0: the lifetime of vended credentials (negative: expired)
	failVends    atomic.Int64 // the next n vend requests fail with failStatus
	failStatus   atomic.Int64
	stall        atomic.Bool // accept every request, never answer it
	endless      atomic.Bool // answer every request with a JSON body without end

	stopOnce sync.Once
	stopped  chan struct{} // closed before the server closes: stalled handlers leave
}

// SetVendLifetime makes the credentials vended from now on expire d after
// they are vended (negative: before), instead of Lifetime; 0 restores
// Lifetime. The expiry is truncated to whole seconds, as always, so
// 1 ms is already past.
func (s *Server) SetVendLifetime(d time.Duration) { s.hostile.vendLifetime.Store(int64(d)) }

// FailVends makes the next n vend requests fail with status (and the
// error body of that status).
func (s *Server) FailVends(n int, status int) {
	s.hostile.failStatus.Store(int64(status))
	s.hostile.failVends.Store(int64(n))
}

// SetStall makes the catalog accept every request and never answer it.
func (s *Server) SetStall(on bool) { s.hostile.stall.Store(on) }

// SetEndless makes the catalog answer every request with 200 and a JSON
// body that never ends.
func (s *Server) SetEndless(on bool) { s.hostile.endless.Store(on) }

// misbehave counts the request and, in a hostile mode, answers it (true).
func (s *Server) misbehave(w http.ResponseWriter, r *http.Request) bool {
	s.Requests.Add(1)
	switch {
	case s.hostile.stall.Load():
		select {
		case <-r.Context().Done():
		case <-s.hostile.stopped:
		}
		return true
	case s.hostile.endless.Load():
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"`))
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			select {
			case <-s.hostile.stopped:
				return true
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return true
			}
		}
	}
	return false
}

// vendFailure answers a vend request that FailVends fails (true).
func (s *Server) vendFailure(w http.ResponseWriter) bool {
	s.VendRequests.Add(1)
	if s.hostile.failVends.Add(-1) < 0 {
		s.hostile.failVends.Store(0)
		return false
	}
	status := int(s.hostile.failStatus.Load())
	writeError(w, status, "INTERNAL_ERROR", "failing on purpose ("+http.StatusText(status)+")")
	return true
}

// lifetime is the lifetime of the credentials vended now.
func (s *Server) lifetime() time.Duration {
	if d := s.hostile.vendLifetime.Load(); d != 0 {
		return time.Duration(d)
	}
	return s.Lifetime
}

func (s *Server) stopHostile() {
	s.hostile.stopOnce.Do(func() { close(s.hostile.stopped) })
}
