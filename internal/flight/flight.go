// Package flight is deltafs's single-flight: concurrent callers asking for
// one key share one call of its function. It is the one single-flight of
// the project: the cache's fills, the snapshot builds and log reads of a
// table, the sample layer's memory cache, open Parquet files and memoised
// metadata all use it.
//
// Why not golang.org/x/sync/singleflight: deltafs needs what it does not
// do. The shared call must not inherit the first caller's cancellation (a
// reader that gives up must not fail the other readers of the same page);
// each caller must be able to leave when its own context ends; and when
// every caller has left, the call is cancelled and forgotten, so that a
// later caller starts a fresh one instead of joining a doomed one (unless
// the group keeps such calls going: Group.Finish). Its keys are also
// strings only.
//
// Nothing is remembered after a call returns: an error reaches the callers
// waiting for it and the next caller calls again. Callers that keep results
// (caches) store them from inside the function and look there first.
package flight

import (
	"context"
	"sync"
)

// Group runs one call per key at a time. The zero value is ready to use;
// set Base and Finish before the first Do.
//
// Locking: mu guards calls and every call's waiters; it is a leaf lock.
type Group[K comparable, V any] struct {
	// Base, if not nil, cancels every running call when it ends (a
	// cache's Close).
	Base context.Context
	// Finish keeps a call going when every caller has left, and a later
	// caller joins it: for work whose result is worth having anyway (it
	// is cached) and costly to start again, such as a table version's
	// snapshot. Otherwise such a call is cancelled and forgotten.
	Finish bool

	wg    sync.WaitGroup // running calls
	mu    sync.Mutex
	calls map[K]*call[V] // guarded by mu; the call in progress per key
}

type call[V any] struct {
	done    chan struct{} // closed when val and err are set
	val     V
	err     error
	waiters int // callers still waiting; guarded by Group.mu
	cancel  context.CancelFunc
}

// Do returns fn's result for key, calling fn unless a call for key is in
// progress, in which case it waits for that call's result. fn runs on its
// own goroutine with a context that keeps ctx's values but is cancelled
// only when every waiter has left (unless Finish is set) or Base ends.
// If ctx ends first, Do returns ctx.Err() at once. joined reports whether
// this caller shared a call another caller started.
func (g *Group[K, V]) Do(ctx context.Context, key K, fn func(context.Context) (V, error)) (v V, joined bool, err error) {
	g.mu.Lock()
	c, joined := g.calls[key]
	if !joined {
		if g.calls == nil {
			g.calls = make(map[K]*call[V])
		}
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stop := func() bool { return false }
		if g.Base != nil {
			stop = context.AfterFunc(g.Base, cancel)
		}
		c = &call[V]{done: make(chan struct{}), cancel: cancel}
		g.calls[key] = c
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			c.val, c.err = fn(fctx)
			g.mu.Lock()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
			g.mu.Unlock()
			close(c.done)
			stop()
			cancel()
		}()
	}
	c.waiters++
	g.mu.Unlock()

	select {
	case <-c.done:
		return c.val, joined, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 && !g.Finish {
			if g.calls[key] == c {
				delete(g.calls, key)
			}
			c.cancel()
		}
		g.mu.Unlock()
		var zero V
		return zero, joined, ctx.Err()
	}
}

// Waiters is the number of callers waiting for key's call in progress (0:
// none in progress), for tests.
func (g *Group[K, V]) Waiters(key K) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.calls[key]; c != nil {
		return c.waiters
	}
	return 0
}

// Wait blocks until every running call has returned.
func (g *Group[K, V]) Wait() { g.wg.Wait() }
