package main

import (
	"sync"
	"sync/atomic"

	"github.com/deltafs/deltafs/cache"
)

// warmLedger records every cache entry a warm pass reads through the
// cache (pages, data file tails, sample indexes, rendered JSON): exactly
// what a mount with the same flags reads for the same samples. Its sum is
// what the pass needs the disk cache to hold, and checking that each entry
// is on disk afterwards (kept) is what lets `deltafs warm` say that a mount
// will read nothing from the data files, rather than hope so: the cache
// evicts silently when its budget is too small. It records nothing until
// start, so that a mount (which never starts it) pays one atomic load per
// cache read.
type warmLedger struct {
	on atomic.Bool

	mu      sync.Mutex
	entries map[cache.Key]int64 // guarded by mu; entry -> its cost (cache.EntrySize)
	bytes   int64               // guarded by mu; sum of the costs
}

// start begins recording.
func (l *warmLedger) start() {
	l.mu.Lock()
	if l.entries == nil {
		l.entries = map[cache.Key]int64{}
	}
	l.mu.Unlock()
	l.on.Store(true)
}

// add records that the entry k, holding n bytes, was read.
func (l *warmLedger) add(k cache.Key, n int) {
	if l == nil || !l.on.Load() {
		return
	}
	l.mu.Lock()
	if _, ok := l.entries[k]; !ok {
		cost := cache.EntrySize(k, int64(n))
		l.entries[k] = cost
		l.bytes += cost
	}
	l.mu.Unlock()
}

// needed is the disk budget the entries recorded so far take.
func (l *warmLedger) needed() (entries int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), l.bytes
}

// kept checks each recorded entry on disk (Locate verifies it completely)
// and counts those there.
func (l *warmLedger) kept(c *cache.Cache) (entries int, bytes int64) {
	l.mu.Lock()
	keys := make(map[cache.Key]int64, len(l.entries))
	for k, cost := range l.entries {
		keys[k] = cost
	}
	l.mu.Unlock()
	for k, cost := range keys {
		if _, _, _, ok := c.Locate(k); ok {
			entries++
			bytes += cost
		}
	}
	return entries, bytes
}
