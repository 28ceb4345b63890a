package snapshot

import "container/list"

// lru is a small least-recently-used map bounded by a total cost, O(1) per
// operation. Not safe for concurrent use: Table guards its caches with its
// mutex.
type lru[K comparable, V any] struct {
	max   int // maximum total cost
	cost  int
	order *list.List // of *lruItem, most recently used first
	items map[K]*list.Element
}

type lruItem[K comparable, V any] struct {
	k    K
	v    V
	cost int
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	e, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruItem[K, V]).v, true
}

// put adds or replaces k, then evicts the least recently used items until
// the total cost fits (an item costlier than the whole cache is not kept).
func (c *lru[K, V]) put(k K, v V, cost int) {
	if cost < 1 {
		cost = 1
	}
	if e, ok := c.items[k]; ok {
		c.cost -= e.Value.(*lruItem[K, V]).cost
		c.order.Remove(e)
		delete(c.items, k)
	}
	if cost > c.max {
		return
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{k: k, v: v, cost: cost})
	c.cost += cost
	for c.cost > c.max {
		e := c.order.Back()
		it := e.Value.(*lruItem[K, V])
		c.order.Remove(e)
		delete(c.items, it.k)
		c.cost -= it.cost
	}
}

// each calls fn for every cached item, most recently used first.
func (c *lru[K, V]) each(fn func(K, V)) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		it := e.Value.(*lruItem[K, V])
		fn(it.k, it.v)
	}
}

func (c *lru[K, V]) len() int { return len(c.items) }

// remove drops k, if cached.
func (c *lru[K, V]) remove(k K) {
	if e, ok := c.items[k]; ok {
		c.cost -= e.Value.(*lruItem[K, V]).cost
		c.order.Remove(e)
		delete(c.items, k)
	}
}

// removeIf drops every item for which drop is true.
func (c *lru[K, V]) removeIf(drop func(K) bool) {
	var keys []K
	for k := range c.items {
		if drop(k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		c.remove(k)
	}
}
