package table

import (
	"context"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/page"
)

// cacheHandle is the two-tier cache seen by one table's sample layer (its
// page.Cache): the sample layer's keys, completed with the table's
// location.
type cacheHandle struct {
	c      *cache.Cache
	table  string
	onRead func(k cache.Key, n int) // Options.OnCacheRead; may be nil
}

func (h cacheHandle) key(k page.Key) cache.Key { return cache.KeyIn(h.table, k) }

func (h cacheHandle) Get(ctx context.Context, k page.Key, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	key := h.key(k)
	v, err := h.c.Get(ctx, key, fetch)
	if err == nil && h.onRead != nil {
		h.onRead(key, len(v))
	}
	return v, err
}

// Prefetch implements page.Prefetcher: read-ahead, bounded by the cache's
// prefetch budget.
func (h cacheHandle) Prefetch(k page.Key, size int64, fetch func(context.Context) ([]byte, error)) bool {
	return h.c.Prefetch(h.key(k), size, fetch)
}
