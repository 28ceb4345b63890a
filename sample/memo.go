package sample

import (
	"runtime"
	"sync"
	"weak"
)

// memo builds each key's value once and shares it while anyone holds it: it
// keeps only weak pointers, so a value lives exactly as long as some
// version, shard or FUSE node references it. Concurrent gets of a key being
// built wait for that build. Errors are not remembered.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*memoEntry[V] // guarded by mu
}

type memoEntry[V any] struct {
	done chan struct{} // closed when the build ended
	v    weak.Pointer[V]
	ok   bool // the build succeeded (set before done is closed)
}

func (m *memo[K, V]) get(key K, build func() (*V, error)) (*V, error) {
	for {
		m.mu.Lock()
		if m.m == nil {
			m.m = make(map[K]*memoEntry[V])
		}
		e := m.m[key]
		if e == nil {
			e = &memoEntry[V]{done: make(chan struct{})}
			m.m[key] = e
			m.mu.Unlock()
			v, err := build()
			if err != nil {
				m.mu.Lock()
				delete(m.m, key)
				m.mu.Unlock()
				close(e.done)
				return nil, err
			}
			e.v, e.ok = weak.Make(v), true
			runtime.AddCleanup(v, m.forget, memoKey[K, V]{key, e})
			close(e.done)
			return v, nil
		}
		m.mu.Unlock()
		<-e.done
		if e.ok {
			if v := e.v.Value(); v != nil {
				return v, nil
			}
		}
		// The value is gone (or its build failed): drop the stale entry
		// if it is still there, and try again.
		m.mu.Lock()
		if m.m[key] == e {
			delete(m.m, key)
		}
		m.mu.Unlock()
	}
}

type memoKey[K comparable, V any] struct {
	key K
	e   *memoEntry[V]
}

func (m *memo[K, V]) forget(k memoKey[K, V]) {
	m.mu.Lock()
	if m.m[k.key] == k.e {
		delete(m.m, k.key)
	}
	m.mu.Unlock()
}
