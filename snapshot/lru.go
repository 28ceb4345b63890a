package snapshot

// lru is a small least-recently-used map bounded by a total cost. Not
// safe for concurrent use: Table guards its caches with its mutex.
type lru[K comparable, V any] struct {
	max   int // maximum total cost; <= 0 disables the cache
	cost  int
	tick  uint64
	items map[K]*lruItem[V]
}

type lruItem[V any] struct {
	v    V
	cost int
	used uint64
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, items: map[K]*lruItem[V]{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	it, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.tick++
	it.used = c.tick
	return it.v, true
}

// put adds or replaces k, then evicts the least recently used items until
// the total cost fits (an item costlier than the whole cache is not kept).
func (c *lru[K, V]) put(k K, v V, cost int) {
	if cost < 1 {
		cost = 1
	}
	if old, ok := c.items[k]; ok {
		c.cost -= old.cost
		delete(c.items, k)
	}
	if cost > c.max {
		return
	}
	c.tick++
	c.items[k] = &lruItem[V]{v: v, cost: cost, used: c.tick}
	c.cost += cost
	for c.cost > c.max {
		var oldest K
		first := true
		var oldestUsed uint64
		for k, it := range c.items {
			if first || it.used < oldestUsed {
				oldest, oldestUsed, first = k, it.used, false
			}
		}
		c.cost -= c.items[oldest].cost
		delete(c.items, oldest)
	}
}

// each calls fn for every cached item (in no order).
func (c *lru[K, V]) each(fn func(K, V)) {
	for k, it := range c.items {
		fn(k, it.v)
	}
}

func (c *lru[K, V]) len() int { return len(c.items) }
