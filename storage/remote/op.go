package remote

import (
	"context"
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
