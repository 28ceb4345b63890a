package cache

import "context"

// defaultPrefetchHint is what a prefetch with an unknown size reserves.
const defaultPrefetchHint = 1 << 20

type prefetchJob struct {
	key     Key
	fetch   FetchFunc
	reserve int64
}

// Prefetch asks for key to be fetched into the cache in the background, for
// read-ahead. It never blocks: it returns false without doing anything when
// the key is already in memory, when the queue is full, or when the bytes of
// queued and running prefetches (by their size hints; ≤ 0 counts as 1 MiB)
// would exceed Options.PrefetchBytes. A single prefetch larger than the
// bound is admitted only when nothing else is in flight. Prefetches of a
// key that a Get is already fetching share that fetch.
func (c *Cache) Prefetch(key Key, size int64, fetch FetchFunc) bool {
	if c.prefetchQ == nil || c.closed.Load() {
		return false
	}
	var scratch [256]byte
	_, sum, err := key.digest(scratch[:])
	if err != nil {
		return false
	}
	if _, ok := c.mem.get(string(sum[:])); ok {
		return false
	}
	if size <= 0 {
		size = defaultPrefetchHint
	}
	if after := c.prefetchInFlight.Add(size); after > c.opts.PrefetchBytes && after != size {
		c.prefetchInFlight.Add(-size)
		c.ctr.prefetchDropped.Add(1)
		return false
	}
	select {
	case c.prefetchQ <- prefetchJob{key: key, fetch: fetch, reserve: size}:
		c.ctr.prefetchQueued.Add(1)
		return true
	default:
		c.prefetchInFlight.Add(-size)
		c.ctr.prefetchDropped.Add(1)
		return false
	}
}

func (c *Cache) prefetchWorker(ctx context.Context) {
	defer c.prefetchWG.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-c.prefetchQ:
			if _, err := c.Get(ctx, j.key, j.fetch); err != nil && ctx.Err() == nil {
				c.log.Debug("cache: prefetch failed", "key", j.key.String(), "err", err)
			}
			c.prefetchInFlight.Add(-j.reserve)
		}
	}
}
