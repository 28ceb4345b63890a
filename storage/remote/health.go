package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// downFailures is how many attempts in a row must fail to reach the
// endpoint, besides Tuning.DownAfter passing, before it is declared down:
// one attempt alone may have met one broken connection.
const downFailures = 2

// noticeEvery spaces the info lines about retries and slow answers: the
// first one of a minute is logged at info level, the others at debug.
const noticeEvery = time.Minute

// HealthConfig is what a Health needs of its store: everything else
// (reaching the endpoint or not, the words of causes) is the same for
// every cloud.
type HealthConfig struct {
	// Name is the backend's name in log lines: "s3", "azure", "gcs".
	Name string
	// Location is the table, in log lines.
	Location string
	// Tuning gives DownAfter, ProbeInterval, the timeouts (in the words
	// of causes) and the Logger; its defaults must be set.
	Tuning Tuning
	// Life ends when the store is closed: it stops the probe.
	Life context.Context
	// Probe sends one attempt of a one-key list of the table, without
	// retries, with ctx: ctx carries an Op with Probe set, which the
	// store's transport lets through while the endpoint is down, and
	// whose outcome it records (Answered, Failed) as for any attempt.
	Probe func(ctx context.Context)
}

// Health is a store's view of its endpoint, a circuit breaker shared by
// every request of the store. The store's HTTP transport tells it about
// every attempt (Check before sending, Sending, then Answered or Failed),
// and its retry decisions ask it (Check, Sleep).
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
// *Unreachable error instead of paying its timeouts and backoff, and a
// goroutine probes the endpoint every ProbeInterval (HealthConfig.Probe).
// The first answer, to a probe or to an attempt still in flight, declares
// it up again. Each change is one log line.
type Health struct {
	cfg HealthConfig
	log *slog.Logger

	lastAnswer atomic.Int64 // Unix ns of the latest answer's arrival
	troubled   atomic.Bool  // a failure streak runs or the endpoint is down
	isDown     atomic.Bool
	endpoint   atomic.Pointer[string] // scheme://host of the latest request

	mu          sync.Mutex
	streakStart time.Time // sending of the first failed attempt of the streak
	streakFails int
	cause       string // the latest endpoint failure, in words
	downSince   time.Time
	downCh      chan struct{} // closed when the endpoint is declared down
	lastNotice  time.Time
	closed      bool
	probes      sync.WaitGroup
}

// NewHealth is the health of a store's endpoint; Close stops its probe.
func NewHealth(cfg HealthConfig) *Health {
	return &Health{cfg: cfg, log: cfg.Tuning.Logger, downCh: make(chan struct{})}
}

// Unreachable fails an attempt at once while the endpoint is down. No SDK
// retries it (the probe does): it says so to each (RetryableError for
// AWS's, NonRetriable for Azure's; gcsstore's retry decision asks).
type Unreachable struct {
	Endpoint string
	Since    time.Time
	Cause    string
	Every    time.Duration
}

func (e *Unreachable) Error() string {
	return fmt.Sprintf("%s; retrying every %v", e.Ended(), e.Every)
}

// Ended is the message for a command that ends on it (every command but a
// serving mount): without "retrying every", since nothing retries once
// the command has exited.
func (e *Unreachable) Ended() string {
	return fmt.Sprintf("endpoint %s unreachable since %s (%s)", e.Endpoint, e.Since.Format("15:04:05"), e.Cause)
}

func (e *Unreachable) RetryableError() bool { return false }
func (e *Unreachable) NonRetriable()        {}

// Check returns an *Unreachable while the endpoint is down, else nil.
func (h *Health) Check() error {
	if !h.isDown.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isDown.Load() {
		return nil
	}
	return &Unreachable{Endpoint: h.endpointName(), Since: h.downSince, Cause: h.cause, Every: h.cfg.Tuning.ProbeInterval}
}

// Sleep waits d before another attempt, or fails at once with an
// *Unreachable when the endpoint is or goes down meanwhile, or with ctx's
// error.
func (h *Health) Sleep(ctx context.Context, d time.Duration) error {
	h.mu.Lock()
	down := h.downCh
	h.mu.Unlock()
	if err := h.Check(); err != nil {
		return err
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-down:
		if err := h.Check(); err != nil {
			return err
		}
		return nil // up again already: try now
	}
}

// Sending records the endpoint an attempt goes to (scheme://host: never a
// path or query, which may hold a SAS token), for messages.
func (h *Health) Sending(u *url.URL) {
	ep := u.Scheme + "://" + u.Host
	if p := h.endpoint.Load(); p == nil || *p != ep {
		h.endpoint.Store(&ep)
	}
}

// endpointName is the endpoint of the latest request.
func (h *Health) endpointName() string {
	if p := h.endpoint.Load(); p != nil {
		return *p
	}
	return "(none yet)"
}

// Answered records an HTTP answer.
func (h *Health) Answered() {
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
		h.downCh = make(chan struct{})
		h.log.Info(h.cfg.Name+": the endpoint answers again; requests resume", "location", h.cfg.Location,
			"endpoint", h.endpointName(), "down_for", now.Sub(h.downSince).Round(time.Second).String())
	}
}

// Failed records an attempt, sent at sent, that ended without an answer
// with err (not the caller's cancellation nor the store's Close: the
// transport tells those apart). It returns why, in words, when err says
// the endpoint was not reached (endpoint true: it counts towards declaring
// the endpoint down); other failures (a refused certificate, a malformed
// answer) say nothing about the endpoint and return endpoint false.
func (h *Health) Failed(sent time.Time, err error) (cause string, endpoint bool) {
	cause, endpoint = h.endpointFailure(err)
	if !endpoint {
		return "", false
	}
	if sent.UnixNano() < h.lastAnswer.Load() {
		return cause, true // the endpoint answered since: this attempt met a broken connection
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
	t := h.cfg.Tuning
	if h.isDown.Load() || h.closed || t.DownAfter < 0 || h.streakFails < downFailures || now.Sub(h.streakStart) < t.DownAfter {
		return cause, true
	}
	h.isDown.Store(true)
	h.downSince = h.streakStart
	close(h.downCh)
	h.log.Warn(h.cfg.Name+": the endpoint is unreachable; requests fail at once until it answers again",
		"location", h.cfg.Location, "endpoint", h.endpointName(), "since", h.downSince.Format("15:04:05"),
		"cause", cause, "probe_every", t.ProbeInterval.String())
	h.probes.Add(1)
	go h.probeLoop()
	return cause, true
}

// Notice logs a line about trouble that may pass (a retry, a slow answer):
// at info level once a minute, at debug level otherwise.
func (h *Health) Notice(msg string, args ...any) {
	h.mu.Lock()
	now := time.Now()
	info := now.Sub(h.lastNotice) >= noticeEvery
	if info {
		h.lastNotice = now
	}
	h.mu.Unlock()
	args = append([]any{"location", h.cfg.Location}, args...)
	if info {
		h.log.Info(msg, args...)
	} else {
		h.log.Debug(msg, args...)
	}
}

// Close stops the probe and keeps new ones from starting; call it after
// Life has ended.
func (h *Health) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.probes.Wait()
}

// probeLoop probes every ProbeInterval until the endpoint answers (the
// transport then calls Answered) or the store is closed.
func (h *Health) probeLoop() {
	defer h.probes.Done()
	every := h.cfg.Tuning.ProbeInterval
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-h.cfg.Life.Done():
			return
		case <-t.C:
		}
		if !h.isDown.Load() {
			return
		}
		h.probe()
		if !h.isDown.Load() {
			return
		}
		t.Reset(every)
	}
}

// probe is one probe attempt, bypassing the down state, within
// ProbeInterval (and RequestTimeout).
func (h *Health) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Tuning.ProbeInterval)
	defer cancel()
	octx, op, done := WithOp(ctx, h.cfg.Life, "probe", "", 0)
	defer done()
	op.Probe = true
	h.cfg.Probe(octx)
}

// endpointFailure says, in words, why an attempt did not reach the
// endpoint; ok is false for other failures.
func (h *Health) endpointFailure(err error) (cause string, ok bool) {
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	var to Timeout
	t := h.cfg.Tuning
	switch {
	case errors.As(err, &to):
		// The transport's word: the attempt ran past RequestTimeout.
		return fmt.Sprintf("no answer within %v", t.RequestTimeout), true
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
		return fmt.Sprintf("no connection within %v", t.ConnectTimeout), true
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", t.RequestTimeout), true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before an answer", true
	case errors.As(err, &op):
		return op.Err.Error(), true
	}
	return "", false
}

// Attempt counts an attempt of op and, from its second on (the probe's
// aside), gives notice that a request failed and is retried, and why
// (op.Cause), as "NAME: a request failed; retrying".
func (h *Health) Attempt(op *Op, maxAttempts int) {
	if a := op.Attempts.Add(1); a > 1 && !op.Probe {
		h.Notice(h.cfg.Name+": a request failed; retrying", "op", op.Op, "key", op.Key,
			"attempt", fmt.Sprintf("%d of %d", a, maxAttempts), "cause", op.Cause())
	}
}

// AttemptFailed records an attempt of op, sent at sent, that failed with
// err while its context was live: an endpoint failure or not (Failed),
// and why in op's cause (describe's words when the endpoint is not to
// blame). It returns *Unreachable when the endpoint is down by now, so
// that no SDK retries the attempt (nil for the probe).
func (h *Health) AttemptFailed(op *Op, sent time.Time, err error, describe func(error) string) error {
	cause, endpoint := h.Failed(sent, err)
	if !endpoint {
		cause = describe(err)
	}
	op.SetCause(cause)
	if herr := h.Check(); herr != nil && !op.Probe {
		return herr
	}
	return nil
}
