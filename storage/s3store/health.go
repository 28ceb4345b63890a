package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// downFailures is how many attempts in a row must fail to reach the
// endpoint, besides Options.DownAfter passing, before it is declared down:
// one attempt alone may have met one broken connection.
const downFailures = 2

// noticeEvery spaces the info lines about retries and slow answers: the
// first one of a minute is logged at info level, the others at debug.
const noticeEvery = time.Minute

// health is the store's view of its endpoint, a circuit breaker shared by
// every request of the store.
//
// An attempt that gets an HTTP answer (any status: a 404 or a 503 is an
// answer) marks the endpoint reachable. An attempt that fails to reach it
// (refused, reset or closed before an answer, no connection within
// ConnectTimeout, no answer within RequestTimeout, a name that does not
// resolve) counts as an endpoint failure, unless it was sent before the
// last answer arrived (then it met a broken connection, not a dead
// endpoint). When at least downFailures such failures in a row span
// DownAfter or more, counted from the sending of the first, the endpoint is
// declared down: every attempt, new or a retry, then fails at once with an
// unreachableError instead of paying its timeouts and backoff, and a
// goroutine probes the endpoint every ProbeInterval with a one-key list.
// The first answer, to a probe or to an attempt still in flight, declares
// it up again. Each change is one log line.
type health struct {
	s *Store

	lastAnswer atomic.Int64 // Unix ns of the latest answer's arrival
	troubled   atomic.Bool  // a failure streak runs or the endpoint is down
	isDown     atomic.Bool
	endpoint   atomic.Pointer[string] // scheme://host of the latest request

	mu          sync.Mutex
	streakStart time.Time // sending of the first failed attempt of the streak
	streakFails int
	cause       string // the latest endpoint failure, in words
	downSince   time.Time
	lastNotice  time.Time
	closed      bool
	probes      sync.WaitGroup
}

// unreachableError fails an attempt at once while the endpoint is down.
type unreachableError struct {
	endpoint string
	since    time.Time
	cause    string
	every    time.Duration
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("endpoint %s unreachable since %s (%s); retrying every %v",
		e.endpoint, e.since.Format("15:04:05"), e.cause, e.every)
}

// RetryableError tells the SDK's retryer not to retry: the probe does.
func (e *unreachableError) RetryableError() bool { return false }

// check returns an unreachableError while the endpoint is down.
func (h *health) check() error {
	if !h.isDown.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isDown.Load() {
		return nil
	}
	return &unreachableError{endpoint: h.endpointName(), since: h.downSince, cause: h.cause, every: h.s.opts.ProbeInterval}
}

// healthRetryer is the SDK's retryer: it gives up instead of waiting for
// another attempt once the endpoint is down.
type healthRetryer struct {
	*retry.Standard
	h *health
}

func (r healthRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if herr := r.h.check(); herr != nil {
		return 0, herr
	}
	return r.Standard.RetryDelay(attempt, err)
}

// sending records the endpoint a request goes to, for messages.
func (h *health) sending(endpoint string) {
	if p := h.endpoint.Load(); p == nil || *p != endpoint {
		h.endpoint.Store(&endpoint)
	}
}

// endpointName is the endpoint of the latest request.
func (h *health) endpointName() string {
	if p := h.endpoint.Load(); p != nil {
		return *p
	}
	return "(none yet)"
}

// answered records an HTTP answer.
func (h *health) answered() {
	now := time.Now()
	h.lastAnswer.Store(now.UnixNano())
	if !h.troubled.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streakFails, h.streakStart = 0, time.Time{}
	h.troubled.Store(false)
	if h.isDown.Load() {
		h.isDown.Store(false)
		h.s.log.Info("s3: the endpoint answers again; requests resume", "location", h.s.loc,
			"endpoint", h.endpointName(), "down_for", now.Sub(h.downSince).Round(time.Second).String())
	}
}

// failed records an attempt, sent at sent, that did not reach the endpoint.
func (h *health) failed(sent time.Time, cause string) {
	if sent.UnixNano() < h.lastAnswer.Load() {
		return // the endpoint answered since: this attempt met a broken connection
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cause = cause
	if h.streakFails == 0 || sent.Before(h.streakStart) {
		h.streakStart = sent
	}
	h.streakFails++
	h.troubled.Store(true)
	after := h.s.opts.DownAfter
	if h.isDown.Load() || h.closed || after < 0 || h.streakFails < downFailures || now.Sub(h.streakStart) < after {
		return
	}
	h.isDown.Store(true)
	h.downSince = h.streakStart
	h.s.log.Warn("s3: the endpoint is unreachable; requests fail at once until it answers again",
		"location", h.s.loc, "endpoint", h.endpointName(), "since", h.downSince.Format("15:04:05"),
		"cause", cause, "probe_every", h.s.opts.ProbeInterval.String())
	h.probes.Add(1)
	go h.probeLoop()
}

// notice logs a line about trouble that may pass (a retry, a slow answer):
// at info level once a minute, at debug level otherwise.
func (h *health) notice(msg string, args ...any) {
	h.mu.Lock()
	now := time.Now()
	info := now.Sub(h.lastNotice) >= noticeEvery
	if info {
		h.lastNotice = now
	}
	h.mu.Unlock()
	args = append([]any{"location", h.s.loc}, args...)
	if info {
		h.s.log.Info(msg, args...)
	} else {
		h.s.log.Debug(msg, args...)
	}
}

// close stops the probe and keeps new ones from starting.
func (h *health) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.probes.Wait()
}

// probeLoop lists one key every ProbeInterval until the endpoint answers
// (httpClient.Do then calls answered) or the store is closed.
func (h *health) probeLoop() {
	defer h.probes.Done()
	s := h.s
	t := time.NewTimer(s.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
		if !h.isDown.Load() {
			return
		}
		s.probe()
		if !h.isDown.Load() {
			return
		}
		t.Reset(s.opts.ProbeInterval)
	}
}

// probe is one attempt of a one-key list of the table, bypassing the
// down state, within ProbeInterval (and RequestTimeout).
func (s *Store) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ProbeInterval)
	defer cancel()
	octx, st, done := s.withOp(ctx, "probe", s.prefix)
	defer done()
	st.Probe = true
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(1)}
	if s.prefix != "" {
		in.Prefix = aws.String(s.prefix)
	}
	_, _ = s.client.ListObjectsV2(octx, in, noSDKRetry) // Do records the outcome
}

// endpointFailure says, in words, why an attempt did not reach the
// endpoint; ok is false for other failures (a refused certificate, a
// malformed answer), which say nothing about the endpoint being up.
func (s *Store) endpointFailure(err error) (cause string, ok bool) {
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return "connection reset", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.EHOSTDOWN):
		return "host unreachable", true
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ENETDOWN):
		return "network unreachable", true
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return fmt.Sprintf("no connection within %v", s.opts.ConnectTimeout), true
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", s.opts.RequestTimeout), true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before an answer", true
	case errors.As(err, &op):
		return op.Err.Error(), true
	}
	return "", false
}
