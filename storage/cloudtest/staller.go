package cloudtest

import (
	"net/http"
	"sync/atomic"
)

// Staller stalls GET response bodies while on: it sends the headers and
// the first After bytes of the body, then waits until the client goes
// away, like a server or network that stops in the middle of a response.
type Staller struct {
	After   int // body bytes sent before the stall
	on      atomic.Bool
	stalled atomic.Int64
}

// Set turns stalling on or off (for responses that start afterwards).
func (s *Staller) Set(on bool) { s.on.Store(on) }

// Stalled counts the responses stalled so far.
func (s *Staller) Stalled() int64 { return s.stalled.Load() }

// Wrap is the middleware.
func (s *Staller) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !s.on.Load() {
			next.ServeHTTP(w, r)
			return
		}
		s.stalled.Add(1)
		next.ServeHTTP(&stallWriter{ResponseWriter: w, left: s.After, done: r.Context().Done()}, r)
	})
}

type stallWriter struct {
	http.ResponseWriter
	left int
	done <-chan struct{}
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	n, err := w.ResponseWriter.Write(p[:w.left])
	w.left = 0
	if err != nil {
		return n, err
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	<-w.done
	return n, http.ErrAbortHandler
}
