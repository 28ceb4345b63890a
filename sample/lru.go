package sample

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// CacheKey names one cached unit of bytes derived from a data file. It
// mirrors cache.Key (the persistent cache's key) minus the table, which the
// adapter adds: File is the data file path, Version its identity guard (its
// size), Column the physical column, Unit the part ("rg/page", a deletion
// vector id, ...).
type CacheKey struct {
	Kind    string
	File    string
	Version string
	Column  string
	Unit    string
}

// BlobCache is where decoded pages and rendered JSON live. Get returns the
// key's bytes, calling fetch once for all concurrent callers on a miss. The
// returned slice is shared and must not be modified. cache.Cache fits this
// through a three-line adapter; MemCache is the built-in memory-only one.
type BlobCache interface {
	Get(ctx context.Context, key CacheKey, fetch func(ctx context.Context) ([]byte, error)) ([]byte, error)
}

// MemCache is a strict LRU of byte slices bounded by their total length,
// with fetches coalesced per key. Safe for concurrent use.
type MemCache struct {
	max int64

	mu      sync.Mutex
	size    int64                      // guarded by mu
	ll      *list.List                 // guarded by mu; front = most recent
	items   map[CacheKey]*list.Element // guarded by mu
	flights map[CacheKey]*flight       // guarded by mu
}

type lruItem struct {
	key CacheKey
	val []byte
}

type flight struct {
	done chan struct{}
	val  []byte
	err  error
}

// NewMemCache returns an LRU holding at most maxBytes (≤ 0: nothing is
// kept, fetches are still coalesced).
func NewMemCache(maxBytes int64) *MemCache {
	return &MemCache{max: maxBytes, ll: list.New(), items: map[CacheKey]*list.Element{}, flights: map[CacheKey]*flight{}}
}

// Get implements BlobCache.
func (c *MemCache) Get(ctx context.Context, key CacheKey, fetch func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		v := el.Value.(*lruItem).val
		c.mu.Unlock()
		return v, nil
	}
	if f, ok := c.flights[key]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
				// The fetching caller gave up, not us: try again.
				return c.Get(ctx, key, fetch)
			}
			return f.val, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()

	f.val, f.err = fetch(ctx)
	c.mu.Lock()
	delete(c.flights, key)
	if f.err == nil {
		c._add(key, f.val)
	}
	c.mu.Unlock()
	close(f.done)
	return f.val, f.err
}

// _add stores a value; call with mu held.
func (c *MemCache) _add(key CacheKey, val []byte) {
	n := int64(len(val)) + 64
	if n > c.max {
		return
	}
	c.items[key] = c.ll.PushFront(&lruItem{key, val})
	c.size += n
	for c.size > c.max {
		el := c.ll.Back()
		it := el.Value.(*lruItem)
		c.ll.Remove(el)
		delete(c.items, it.key)
		c.size -= int64(len(it.val)) + 64
	}
}

// Len is the number of cached entries and their bytes.
func (c *MemCache) Len() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len(), c.size
}
