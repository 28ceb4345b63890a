package page

import (
	"context"
	"sync"

	"github.com/deltafs/deltafs/internal/flight"
	"github.com/deltafs/deltafs/internal/lru"
)

// Key names one cached unit of bytes derived from a data file: File is the
// data file path, Version its identity guard (FileRef.Identity), Column the
// physical column, Unit the part ("rg/page", a deletion vector id, ...).
// It is the persistent cache's key (cache.Key) minus the table, which
// cache.KeyIn adds: its fields must stay those of cache.FileKey, or the
// callers of KeyIn stop compiling. FileRef.CacheKey makes a file's keys.
type Key struct {
	Kind    string
	File    string
	Version string
	Column  string
	Unit    string
}

// Cache is where decoded pages and rendered JSON live. Get returns the
// key's bytes, calling fetch once for all concurrent callers on a miss. The
// returned slice is shared and must not be modified. cache.Cache fits this
// through a three-line adapter; MemCache is the built-in memory-only one.
type Cache interface {
	Get(ctx context.Context, key Key, fetch func(ctx context.Context) ([]byte, error)) ([]byte, error)
}

// MemCache is a strict LRU of byte slices bounded by their total length
// (plus memEntryOverhead each), with fetches coalesced per key. Safe for
// concurrent use.
type MemCache struct {
	mu      sync.Mutex
	lru     *lru.Cache[Key, []byte] // guarded by mu
	flights flight.Group[Key, []byte]
}

// memEntryOverhead is what an entry is counted beyond its bytes: its key
// and bookkeeping.
const memEntryOverhead = 64

// NewMemCache returns an LRU holding at most maxBytes (≤ 0: nothing is
// kept, fetches are still coalesced).
func NewMemCache(maxBytes int64) *MemCache {
	return &MemCache{lru: lru.New[Key, []byte](maxBytes, nil)}
}

// Get implements Cache. Concurrent Gets of a missing key share one
// fetch (internal/flight): it runs with a context that keeps ctx's values
// and ends only when every Get waiting for it has left; a Get whose ctx
// ends leaves at once. A failed fetch is not kept.
func (c *MemCache) Get(ctx context.Context, key Key, fetch func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	if v, ok := c.get(key); ok {
		return v, nil
	}
	v, _, err := c.flights.Do(ctx, key, func(ctx context.Context) ([]byte, error) {
		// A fetch that ended between the lookup above and this one has
		// stored its bytes.
		if v, ok := c.get(key); ok {
			return v, nil
		}
		v, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.lru.Add(key, v, int64(len(v))+memEntryOverhead)
		c.mu.Unlock()
		return v, nil
	})
	return v, err
}

func (c *MemCache) get(key Key) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(key)
}

// Len is the number of cached entries and their bytes.
func (c *MemCache) Len() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.lru.Cost()
}
