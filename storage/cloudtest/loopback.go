package cloudtest

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Loopback serves an in-process fake on a real 127.0.0.1 listener. Stop and
// Start restart it on the same address with the same handler (and so the
// same objects), like a server that goes away and comes back.
type Loopback struct {
	Addr string // 127.0.0.1:port

	handler http.Handler
	mu      sync.Mutex
	srv     *http.Server
	done    chan struct{}
	open    atomic.Int64 // client connections open now
}

// Listen listens on a free loopback port.
func Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// ServeLoopback serves h on ln (see Listen); the caller stops it.
func ServeLoopback(ln net.Listener, h http.Handler) *Loopback {
	l := &Loopback{Addr: ln.Addr().String(), handler: h}
	l.serve(ln)
	return l
}

// OpenConns is the number of client connections open now (idle ones
// included).
func (l *Loopback) OpenConns() int64 { return l.open.Load() }

func (l *Loopback) serve(ln net.Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	srv := &http.Server{
		Handler: l.handler,
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				l.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				l.open.Add(-1)
			}
		},
	}
	l.srv = srv
	done := make(chan struct{})
	l.done = done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
}

// Stop closes the listener and every open connection, and waits until the
// server has stopped. Stopping a stopped server does nothing.
func (l *Loopback) Stop() {
	l.mu.Lock()
	srv, done := l.srv, l.done
	l.srv = nil
	l.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close() // closes the listener and every connection
	<-done
}

// Start restarts a stopped server on the same address. The port may
// briefly be unavailable; Start retries for up to 5 s.
func (l *Loopback) Start(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	running := l.srv != nil
	l.mu.Unlock()
	if running {
		return
	}
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", l.Addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("cloudtest: restart on %s: %v", l.Addr, err)
	}
	l.serve(ln)
}
