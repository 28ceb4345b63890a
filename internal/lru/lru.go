// Package lru is deltafs's least-recently-used map: a strict LRU bounded by
// the total cost of its entries (bytes, lines, or 1 per entry for a bound
// on their count), O(1) per operation. It is the one LRU of the project:
// the snapshot caches of a table, the sample layer's memory cache and open
// Parquet files, the cache's front tier and the local store's open
// descriptors all use it.
//
// Why not a library: hashicorp/golang-lru bounds only the number of
// entries, and ristretto (used by package cache for its bulk) admits
// entries asynchronously and by frequency, so an entry just added may be
// missing; deltafs needs a strict LRU bounded by bytes whose Add is a
// guaranteed hit for the next Get.
//
// A Cache is not safe for concurrent use: every user guards it with its own
// mutex, usually together with state of its own (flights in progress,
// reference counts), so a lock here would be a second lock.
package lru

import "iter"

// Cache is a least-recently-used map bounded by the total cost of its
// entries. The zero value is not usable: call New.
type Cache[K comparable, V any] struct {
	max     int64
	cost    int64
	onEvict func(K, V)
	items   map[K]*entry[K, V]
	root    entry[K, V] // sentinel of the ring: root.next is the most recent
}

type entry[K comparable, V any] struct {
	prev, next *entry[K, V]
	key        K
	val        V
	cost       int64
}

// New returns a cache holding entries of total cost at most maxCost (≤ 0:
// nothing is kept). onEvict, if not nil, is called (with the caller's lock
// held) for each entry evicted to make room for another; not for entries
// removed by Remove or RemoveFunc, nor for a value replaced by Add.
func New[K comparable, V any](maxCost int64, onEvict func(K, V)) *Cache[K, V] {
	c := &Cache[K, V]{max: maxCost, onEvict: onEvict, items: map[K]*entry[K, V]{}}
	c.root.next, c.root.prev = &c.root, &c.root
	return c
}

// Get returns k's value and makes it the most recently used.
func (c *Cache[K, V]) Get(k K) (v V, ok bool) {
	if e := c.items[k]; e != nil {
		c.unlink(e)
		c.pushFront(e)
		v, ok = e.val, true
	}
	return v, ok
}

// Add stores v under k (replacing k's value, if any) as the most recently
// used entry, then evicts the least recently used entries until the total
// cost fits. An entry costing more than the whole cache is not kept (and
// k's previous value, if any, is removed): Add reports whether v was kept.
// A negative cost counts as 0.
func (c *Cache[K, V]) Add(k K, v V, cost int64) bool {
	cost = max(cost, 0)
	if e, ok := c.items[k]; ok {
		c.drop(e)
	}
	if cost > c.max {
		return false
	}
	e := &entry[K, V]{key: k, val: v, cost: cost}
	c.items[k] = e
	c.pushFront(e)
	c.cost += cost
	for c.cost > c.max {
		old := c.root.prev
		c.drop(old)
		if c.onEvict != nil {
			c.onEvict(old.key, old.val)
		}
	}
	return true
}

// Remove drops k, returning its value, if cached.
func (c *Cache[K, V]) Remove(k K) (v V, ok bool) {
	if e := c.items[k]; e != nil {
		c.drop(e)
		v, ok = e.val, true
	}
	return v, ok
}

// RemoveFunc drops every entry for which drop returns true.
func (c *Cache[K, V]) RemoveFunc(drop func(K, V) bool) {
	for e := c.root.next; e != &c.root; {
		next := e.next
		if drop(e.key, e.val) {
			c.drop(e)
		}
		e = next
	}
}

// All yields every entry, most recently used first, without changing the
// order. The cache must not be changed during the iteration.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for e := c.root.next; e != &c.root; e = e.next {
			if !yield(e.key, e.val) {
				return
			}
		}
	}
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int { return len(c.items) }

// Cost is the total cost of the entries.
func (c *Cache[K, V]) Cost() int64 { return c.cost }

func (c *Cache[K, V]) drop(e *entry[K, V]) {
	c.unlink(e)
	delete(c.items, e.key)
	c.cost -= e.cost
}

func (c *Cache[K, V]) unlink(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *Cache[K, V]) pushFront(e *entry[K, V]) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}
