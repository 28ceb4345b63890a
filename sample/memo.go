package sample

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"github.com/deltafs/deltafs/internal/flight"
)

// memo builds each key's value once and shares it while anyone holds it: it
// keeps only weak pointers, so a value lives exactly as long as some
// version, shard or FUSE node references it. Concurrent gets of a key being
// built share that build (internal/flight); a get whose ctx ends leaves at
// once. Errors are not remembered.
type memo[K comparable, V any] struct {
	mu     sync.Mutex
	m      map[K]weak.Pointer[V] // guarded by mu
	builds flight.Group[K, *V]
}

// get returns key's value, building it with build (on a context that keeps
// ctx's values and ends when every get waiting for it has left) when no
// one holds it.
func (m *memo[K, V]) get(ctx context.Context, key K, build func(context.Context) (*V, error)) (*V, error) {
	if v := m.lookup(key); v != nil {
		return v, nil
	}
	v, _, err := m.builds.Do(ctx, key, func(ctx context.Context) (*V, error) {
		// A build that ended between the lookup above and this one has
		// stored its value.
		if v := m.lookup(key); v != nil {
			return v, nil
		}
		v, err := build(ctx)
		if err != nil {
			return nil, err
		}
		wp := weak.Make(v)
		m.mu.Lock()
		if m.m == nil {
			m.m = make(map[K]weak.Pointer[V])
		}
		m.m[key] = wp
		m.mu.Unlock()
		runtime.AddCleanup(v, m.forget, memoKey[K, V]{key, wp})
		return v, nil
	})
	return v, err
}

// lookup returns key's value if someone still holds it.
func (m *memo[K, V]) lookup(key K) *V {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key].Value()
}

type memoKey[K comparable, V any] struct {
	key K
	wp  weak.Pointer[V]
}

// forget drops the entry of a value no one holds any more (unless the key
// was built again since).
func (m *memo[K, V]) forget(k memoKey[K, V]) {
	m.mu.Lock()
	if m.m[k.key] == k.wp {
		delete(m.m, k.key)
	}
	m.mu.Unlock()
}
