package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Op follows one logical operation (with its retries) through an SDK down
// to the HTTP transport, which counts its attempts and records why the
// latest one failed, for the retry log line and the final error.
type Op struct {
	Op, Key  string // for messages
	Probe    bool   // a health probe, sent while the endpoint is down (see Health)
	Attempts atomic.Int64
	cause    atomic.Pointer[string]
	ctx      context.Context // the operation's, from WithOp
}

// Ended reports whether the operation's context is done (the caller's
// cancellation or deadline, the store's Close, the operation's bound): a
// transport below an HTTP client that cut an attempt by its own timeout
// tells that timeout from the caller's this way.
func (o *Op) Ended() bool { return o.ctx != nil && o.ctx.Err() != nil }

// SetCause records why the latest attempt failed, in words.
func (o *Op) SetCause(c string) { o.cause.Store(&c) }

// Cause is why the latest attempt failed, or "unknown".
func (o *Op) Cause() string {
	if c := o.cause.Load(); c != nil {
		return *c
	}
	return "unknown"
}

// AttemptCount is the number of attempts so far.
func (o *Op) AttemptCount() int { return int(o.Attempts.Load()) }

type opKey struct{}

// OpOf returns the Op of the operation ctx belongs to, or nil.
func OpOf(ctx context.Context) *Op {
	o, _ := ctx.Value(opKey{}).(*Op)
	return o
}

// WithOp starts an operation: its context carries the Op and is cancelled
// when life ends (the store's Close), so that nothing in flight (an
// attempt, a body being read, a backoff) outlives Close; with bound > 0 it
// also ends after bound. done releases it.
func WithOp(ctx, life context.Context, op, key string, bound time.Duration) (context.Context, *Op, func()) {
	o := &Op{Op: op, Key: key}
	ctx = context.WithValue(ctx, opKey{}, o)
	var octx context.Context
	var cancel context.CancelFunc
	if bound > 0 {
		octx, cancel = context.WithTimeout(ctx, bound)
	} else {
		octx, cancel = context.WithCancel(ctx)
	}
	o.ctx = octx
	stop := context.AfterFunc(life, cancel)
	return octx, o, func() { stop(); cancel() }
}

// Retrying is how an operation whose attempts the store makes itself (a
// GET, which can also fail while its body is read, after the SDK has
// returned) is retried; see Op.Retry.
type Retrying struct {
	Counters    *Counters
	MaxAttempts int
	// Describe says in words why an attempt failed while its body was
	// read (a *BodyError), for the next attempt's log line.
	Describe func(error) string
	// Wait waits before attempt+1 after err, or fails (the context ended,
	// the endpoint is down).
	Wait func(ctx context.Context, attempt int, err error) error
	// Final turns the error that ends the operation into the store's,
	// with the number of attempts made.
	Final func(err error, attempts int) error
}

// Retry runs attempt until it succeeds, fails for good (not retryable),
// ctx ends or MaxAttempts attempts are spent, waiting r.Wait between two,
// and counts the operation's retries. ctx is the operation's (WithOp).
func (o *Op) Retry(ctx context.Context, r Retrying, attempt func() (err error, retryable bool)) error {
	for i := 1; ; i++ {
		err, retryable := attempt()
		if err == nil {
			r.Counters.CountRetries(o.AttemptCount())
			return nil
		}
		if !retryable || i >= r.MaxAttempts || ctx.Err() != nil {
			r.Counters.CountRetries(o.AttemptCount())
			return r.Final(err, o.AttemptCount())
		}
		var be *BodyError
		if errors.As(err, &be) {
			o.SetCause(r.Describe(err))
		}
		if werr := r.Wait(ctx, i, err); werr != nil {
			r.Counters.CountRetries(o.AttemptCount())
			return r.Final(werr, o.AttemptCount())
		}
	}
}
