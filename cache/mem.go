package cache

import (
	"sync"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/deltafs/deltafs/internal/lru"
)

// memTier is the memory tier: a small strict LRU (front) in front of a
// ristretto cache. Both hold the same immutable payload slices, never copies.
// A nil *memTier is a disabled tier: every method is a no-op or a miss.
//
// Why the front LRU (measured in BenchmarkMemTier and TestMemTierReadAfterSet,
// see the package documentation): ristretto's Set is asynchronous and may be
// dropped or rejected by admission, so a payload fetched a microsecond ago —
// the common case for read-ahead (Prefetch then Get) — is often not there.
// The front LRU makes "just stored" a guaranteed hit for the most recent
// FrontBytes, while ristretto keeps the frequency-aware, scan-resistant bulk.
type memTier struct {
	front *frontLRU                        // nil when FrontBytes < 0
	rc    *ristretto.Cache[string, []byte] // nil when nothing is left for it
	ctr   *counters
}

func newMemTier(memBytes, frontBytes int64, ctr *counters) (*memTier, error) {
	if memBytes <= 0 {
		return nil, nil
	}
	m := &memTier{ctr: ctr}
	if frontBytes > 0 {
		m.front = newFrontLRU(frontBytes, ctr)
	}
	rcBytes := memBytes - max(frontBytes, 0)
	if rcBytes > 0 {
		// Ten counters per expected item (ristretto's advice), items assumed
		// to average 4 KiB; at about 3 bytes per counter that is under 1% of
		// the tier, capped at 2^24 counters.
		items := max(rcBytes/4096, 1000)
		rc, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
			NumCounters:        min(10*items, 1<<24),
			MaxCost:            rcBytes,
			BufferItems:        64,
			Metrics:            true,
			IgnoreInternalCost: true, // cost is payload bytes, nothing else
			OnEvict:            func(*ristretto.Item[[]byte]) { ctr.memEvictions.Add(1) },
		})
		if err != nil {
			return nil, err
		}
		m.rc = rc
	}
	return m, nil
}

func (m *memTier) get(sum string) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	if m.front != nil {
		if v, ok := m.front.get(sum); ok {
			return v, true
		}
	}
	if m.rc != nil {
		return m.rc.Get(sum)
	}
	return nil, false
}

// set offers v to both parts; either may decline (too large, dropped,
// rejected). Nothing depends on it succeeding.
func (m *memTier) set(sum string, v []byte) {
	if m == nil {
		return
	}
	if m.front != nil {
		m.front.add(sum, v)
	}
	if m.rc != nil {
		m.rc.Set(sum, v, max(int64(len(v)), 1))
	}
}

func (m *memTier) bytes() int64 {
	if m == nil {
		return 0
	}
	var n int64
	if m.front != nil {
		n += m.front.size()
	}
	if m.rc != nil && m.rc.Metrics != nil {
		n += int64(m.rc.Metrics.CostAdded() - m.rc.Metrics.CostEvicted())
	}
	return n
}

func (m *memTier) dropped() (drops, rejects uint64) {
	if m == nil || m.rc == nil || m.rc.Metrics == nil {
		return 0, 0
	}
	return m.rc.Metrics.SetsDropped(), m.rc.Metrics.SetsRejected()
}

func (m *memTier) close() {
	if m != nil && m.rc != nil {
		m.rc.Close()
	}
}

// frontLRU is a strict least-recently-used map bounded by payload bytes,
// counting its evictions.
//
// Locking: mu guards lru; it is a leaf lock.
type frontLRU struct {
	mu  sync.Mutex
	lru *lru.Cache[string, []byte] // guarded by mu; cost: payload bytes
}

func newFrontLRU(capacity int64, ctr *counters) *frontLRU {
	return &frontLRU{lru: lru.New(capacity, func(string, []byte) { ctr.frontEvictions.Add(1) })}
}

func (f *frontLRU) get(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lru.Get(key)
}

func (f *frontLRU) add(key string, v []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lru.Get(key); ok {
		return // entries are immutable: same key, same bytes
	}
	f.lru.Add(key, v, int64(len(v)))
}

func (f *frontLRU) size() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lru.Cost()
}
