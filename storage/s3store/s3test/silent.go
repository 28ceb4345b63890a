package s3test

import (
	"net"
	"sync"
	"testing"
)

// Silent is an endpoint that accepts TCP connections and never answers: it
// reads and drops whatever a client sends, like a hung server or a proxy
// whose upstream is gone. Stop closes the listener and every connection.
type Silent struct {
	Endpoint string // http://127.0.0.1:port

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	stop  bool
}

// StartSilent starts a Silent endpoint; t.Cleanup stops it.
func StartSilent(t testing.TB) *Silent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3test: listen: %v", err)
	}
	s := &Silent{Endpoint: "http://" + ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Stop)
	return s
}

// Accepted is the number of connections open now.
func (s *Silent) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Silent) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.stop {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			c.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Stop closes the listener and every connection, and waits for them.
func (s *Silent) Stop() {
	s.mu.Lock()
	s.stop = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}
