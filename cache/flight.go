package cache

import (
	"context"
	"sync"
)

// flightGroup runs one fill per key at a time and shares its result with
// every caller that asks for the key meanwhile.
//
// It replaces golang.org/x/sync/singleflight because deltafs needs two things
// singleflight does not do: the shared fetch must not inherit the first
// caller's cancellation (a reader that gives up must not fail the other
// readers of the same page), and when every waiter has given up the fetch
// must be cancelled and forgotten, so a later caller starts a fresh one
// instead of joining a doomed one.
//
// Locking: mu guards calls and every call's waiters; leaf lock.
type flightGroup struct {
	base context.Context // cancelled by Cache.Close; cancels every fill
	wg   sync.WaitGroup  // running fills
	mu   sync.Mutex
	// calls holds the fill in progress per key.
	calls map[string]*call
}

type call struct {
	done    chan struct{} // closed when val and err are set
	val     []byte
	err     error
	waiters int // callers still waiting; guarded by flightGroup.mu
	cancel  context.CancelFunc
}

// do returns fn's result for key. fn runs on its own goroutine with a context
// that keeps ctx's values but is cancelled only when every waiter has left
// or the group's base context ends. started reports whether this caller
// started the fill (false: it shared another caller's).
func (g *flightGroup) do(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) (v []byte, started bool, err error) {
	g.mu.Lock()
	c, ok := g.calls[key]
	if !ok {
		started = true
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stop := context.AfterFunc(g.base, cancel)
		c = &call{done: make(chan struct{}), cancel: cancel}
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
		return c.val, started, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			if g.calls[key] == c {
				delete(g.calls, key)
			}
			c.cancel()
		}
		g.mu.Unlock()
		return nil, started, ctx.Err()
	}
}

// wait blocks until every fill has returned.
func (g *flightGroup) wait() { g.wg.Wait() }
