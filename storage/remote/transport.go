package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewTransport is a backend's HTTP transport: connecting (TCP and TLS) is
// bounded by connect, so that a host that drops packets fails an attempt
// in seconds, and up to conns idle connections are kept per host.
func NewTransport(connect time.Duration, conns int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   connect,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
	}
}

// Closed fails the attempts of a closed store; no SDK retries it.
type Closed struct{}

func (Closed) Error() string        { return "store closed" }
func (Closed) NonRetriable()        {}
func (Closed) RetryableError() bool { return false }

// Acquire waits for a slot of sem (the bound on requests in flight) and
// counts it in InFlight and MaxInFlight. It fails with ctx's error, or
// with Closed when closed (nil: never) is closed first. release gives the
// slot back; it may be called more than once.
func (c *Counters) Acquire(ctx context.Context, sem chan struct{}, closed <-chan struct{}) (release func(), err error) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-closed:
		return nil, Closed{}
	}
	n := c.InFlight.Add(1)
	for {
		m := c.MaxInFlight.Load()
		if n <= m || c.MaxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.InFlight.Add(-1)
			<-sem
		})
	}, nil
}

// Body is a response body that holds its request's concurrency slot until
// it is closed and, with Bytes set, counts the bytes read from it.
type Body struct {
	io.ReadCloser
	Release func()
	Bytes   *atomic.Int64
}

func (b *Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.Bytes != nil {
		b.Bytes.Add(int64(n))
	}
	return n, err
}

func (b *Body) Close() error {
	err := b.ReadCloser.Close()
	b.Release()
	return err
}

// BodyError is a failure while reading a response body: a cut connection,
// a stall past the attempt timeout, or fewer bytes than announced.
type BodyError struct {
	Want, Got int64
	Err       error
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("body cut short, %d of %d bytes received: %v", e.Got, e.Want, e.Err)
}
func (e *BodyError) Unwrap() error { return e.Err }

// Admit is the gate of every store's transport before an attempt: after
// Close (life ended) it fails with Closed; while the endpoint is down it
// fails at once with *Unreachable, which no SDK retries (the health
// probe, op.Probe, passes); then it takes a concurrency slot from sem,
// given up when ctx ends or the store is closed. release frees the slot.
func (c *Counters) Admit(ctx, life context.Context, h *Health, op *Op, sem chan struct{}) (release func(), err error) {
	if life.Err() != nil {
		return nil, Closed{}
	}
	if op == nil || !op.Probe {
		if err := h.Check(); err != nil {
			return nil, err
		}
	}
	return c.Acquire(ctx, sem, life.Done())
}
