package cache

import (
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the cache's event counts, updated with atomics from any
// goroutine; Stats takes a snapshot.
type counters struct {
	memLookups                                 atomic.Uint64 // for sampling memory-hit latency
	memHits, memMisses, diskHits, diskMisses   atomic.Uint64
	fetches, fetchErrors, fetchedBytes, shared atomic.Uint64
	memEvictions, frontEvictions               atomic.Uint64
	diskWrites, diskWriteErrors                atomic.Uint64
	diskEvictions, diskEvictedBytes            atomic.Uint64
	corrupt, bypassed, floorSkips              atomic.Uint64
	prefetchQueued, prefetchDropped            atomic.Uint64
	latMem, latDisk, latFetch                  histogram
}

// Stats is a snapshot of the cache's counters. Hits and misses count lookups
// per tier: a Get that misses memory and hits disk counts one memory miss and
// one disk hit.
type Stats struct {
	MemHits, MemMisses   uint64
	DiskHits, DiskMisses uint64
	Fetches              uint64 // fetch functions called (and returned without error)
	FetchErrors          uint64 // fetch functions that failed; nothing cached
	FetchedBytes         uint64 // bytes returned by fetch functions
	Shared               uint64 // Gets served by a fetch another Get started

	MemBytes        int64  // payload bytes held by the memory tier
	MemEvictions    uint64 // evicted by ristretto
	FrontEvictions  uint64 // evicted by the strict LRU in front of ristretto
	MemSetsDropped  uint64 // ristretto Sets dropped under contention
	MemSetsRejected uint64 // ristretto Sets refused by its admission policy

	DiskEntries      int64 // entries this process knows of
	DiskBytes        int64 // their file bytes
	DiskBudget       int64
	DiskWrites       uint64
	DiskWriteErrors  uint64
	DiskEvictions    uint64
	DiskEvictedBytes uint64
	Corrupt          uint64 // corrupt or truncated entries found and dropped
	Bypassed         uint64 // payloads larger than the disk budget, returned but not stored
	FloorSkips       uint64 // payloads not stored for lack of room (free-space floor)

	PrefetchQueued, PrefetchDropped uint64

	// Latency of Get by where the bytes came from. Fetch includes waiting
	// for a fetch another Get started. Memory hits are sampled: one lookup
	// in memSampleEvery (8) is timed.
	MemLatency, DiskLatency, FetchLatency Latency
}

// Latency summarises a histogram. Percentiles are bucket upper bounds; the
// buckets are a factor of √2 apart, so a percentile overstates by up to 41%.
type Latency struct {
	Count         uint64
	P50, P90, P99 time.Duration
}

// histogram counts durations in buckets whose upper bounds are 64 ns × √2^i.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	sumNS  atomic.Uint64
}

const histBuckets = 64

// memSampleEvery: one memory lookup in this many is timed.
const memSampleEvery = 8

// histBounds[i] is bucket i's inclusive upper bound in ns; the last bucket
// also takes everything beyond (about 194 s).
var histBounds = func() [histBuckets]int64 {
	var b [histBuckets]int64
	for i := range b {
		b[i] = int64(math.Round(64 * math.Pow(math.Sqrt2, float64(i))))
	}
	return b
}()

func (h *histogram) observe(d time.Duration) {
	ns := int64(d)
	i := sort.Search(histBuckets-1, func(i int) bool { return histBounds[i] >= ns })
	h.counts[i].Add(1)
	h.sumNS.Add(uint64(max(ns, 0)))
}

func (h *histogram) snapshot() (counts [histBuckets]uint64, total uint64) {
	for i := range counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	return counts, total
}

func (h *histogram) latency() Latency {
	counts, total := h.snapshot()
	l := Latency{Count: total}
	if total == 0 {
		return l
	}
	q := func(p float64) time.Duration {
		rank := uint64(math.Ceil(p * float64(total)))
		var cum uint64
		for i, c := range counts {
			cum += c
			if cum >= rank {
				return time.Duration(histBounds[i])
			}
		}
		return time.Duration(histBounds[histBuckets-1])
	}
	l.P50, l.P90, l.P99 = q(0.50), q(0.90), q(0.99)
	return l
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	k := c.ctr
	s := Stats{
		MemHits: k.memHits.Load(), MemMisses: k.memMisses.Load(),
		DiskHits: k.diskHits.Load(), DiskMisses: k.diskMisses.Load(),
		Fetches: k.fetches.Load(), FetchErrors: k.fetchErrors.Load(),
		FetchedBytes: k.fetchedBytes.Load(), Shared: k.shared.Load(),
		MemBytes:     c.mem.bytes(),
		MemEvictions: k.memEvictions.Load(), FrontEvictions: k.frontEvictions.Load(),
		DiskWrites: k.diskWrites.Load(), DiskWriteErrors: k.diskWriteErrors.Load(),
		DiskEvictions: k.diskEvictions.Load(), DiskEvictedBytes: k.diskEvictedBytes.Load(),
		Corrupt: k.corrupt.Load(), Bypassed: k.bypassed.Load(), FloorSkips: k.floorSkips.Load(),
		PrefetchQueued: k.prefetchQueued.Load(), PrefetchDropped: k.prefetchDropped.Load(),
		MemLatency: k.latMem.latency(), DiskLatency: k.latDisk.latency(), FetchLatency: k.latFetch.latency(),
	}
	s.MemSetsDropped, s.MemSetsRejected = c.mem.dropped()
	if c.disk != nil {
		s.DiskEntries, s.DiskBytes = c.disk.usage()
		s.DiskBudget = c.disk.budget
	}
	return s
}

// Collectors returns Prometheus collectors for the cache's counters, gauges
// and Get latency histograms, for the mount to register. Every metric is
// named deltafs_cache_*; register one Cache per registry (or wrap the
// registerer with prometheus.WrapRegistererWith to add a label).
func (c *Cache) Collectors() []prometheus.Collector {
	return []prometheus.Collector{newCollector(c)}
}

type collector struct {
	c                                        *Cache
	hits, misses, evictions                  *prometheus.Desc
	fetches, fetchErrors, fetchedBytes       *prometheus.Desc
	shared, corrupt, bypassed, floorSkips    *prometheus.Desc
	diskWrites, diskWriteErrors, evictedByte *prometheus.Desc
	prefetch                                 *prometheus.Desc
	memBytes, diskBytes, diskEntries, budget *prometheus.Desc
	latency                                  *prometheus.Desc
}

func newCollector(c *Cache) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("deltafs_cache_"+name, help, labels, nil)
	}
	return &collector{
		c:               c,
		hits:            d("hits_total", "Cache lookups that found the entry, by tier.", "tier"),
		misses:          d("misses_total", "Cache lookups that did not find the entry, by tier.", "tier"),
		evictions:       d("evictions_total", "Entries evicted, by tier (memory: ristretto, front: strict LRU, disk).", "tier"),
		fetches:         d("fetches_total", "Fetch functions called that succeeded."),
		fetchErrors:     d("fetch_errors_total", "Fetch functions that failed."),
		fetchedBytes:    d("fetched_bytes_total", "Bytes returned by fetch functions."),
		shared:          d("shared_fetches_total", "Gets served by a fetch another Get started."),
		corrupt:         d("corrupt_entries_total", "Corrupt or truncated disk entries dropped."),
		bypassed:        d("bypassed_total", "Payloads larger than the disk budget, not stored."),
		floorSkips:      d("no_room_total", "Payloads not stored because the free-space floor could not be kept."),
		diskWrites:      d("disk_writes_total", "Disk entries written."),
		diskWriteErrors: d("disk_write_errors_total", "Disk entry writes that failed."),
		evictedByte:     d("disk_evicted_bytes_total", "Bytes of disk entries evicted."),
		prefetch:        d("prefetch_total", "Prefetch requests, by outcome (queued, dropped).", "outcome"),
		memBytes:        d("memory_bytes", "Payload bytes in the memory tier."),
		diskBytes:       d("disk_bytes", "File bytes of the disk entries this process knows of."),
		diskEntries:     d("disk_entries", "Disk entries this process knows of."),
		budget:          d("disk_budget_bytes", "Disk tier byte budget."),
		latency:         d("get_seconds", "Get latency by where the bytes came from.", "source"),
	}
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.hits, k.misses, k.evictions, k.fetches, k.fetchErrors, k.fetchedBytes,
		k.shared, k.corrupt, k.bypassed, k.floorSkips, k.diskWrites, k.diskWriteErrors, k.evictedByte,
		k.prefetch, k.memBytes, k.diskBytes, k.diskEntries, k.budget, k.latency} {
		ch <- d
	}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	s := k.c.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(k.hits, s.MemHits, "memory")
	counter(k.hits, s.DiskHits, "disk")
	counter(k.misses, s.MemMisses, "memory")
	counter(k.misses, s.DiskMisses, "disk")
	counter(k.evictions, s.MemEvictions, "memory")
	counter(k.evictions, s.FrontEvictions, "front")
	counter(k.evictions, s.DiskEvictions, "disk")
	counter(k.fetches, s.Fetches)
	counter(k.fetchErrors, s.FetchErrors)
	counter(k.fetchedBytes, s.FetchedBytes)
	counter(k.shared, s.Shared)
	counter(k.corrupt, s.Corrupt)
	counter(k.bypassed, s.Bypassed)
	counter(k.floorSkips, s.FloorSkips)
	counter(k.diskWrites, s.DiskWrites)
	counter(k.diskWriteErrors, s.DiskWriteErrors)
	counter(k.evictedByte, s.DiskEvictedBytes)
	counter(k.prefetch, s.PrefetchQueued, "queued")
	counter(k.prefetch, s.PrefetchDropped, "dropped")
	gauge(k.memBytes, s.MemBytes)
	gauge(k.diskBytes, s.DiskBytes)
	gauge(k.diskEntries, s.DiskEntries)
	gauge(k.budget, s.DiskBudget)
	for _, h := range []struct {
		source string
		h      *histogram
	}{{"memory", &k.c.ctr.latMem}, {"disk", &k.c.ctr.latDisk}, {"fetch", &k.c.ctr.latFetch}} {
		ch <- h.h.metric(k.latency, h.source)
	}
}

// metric is the histogram as a Prometheus histogram in seconds.
func (h *histogram) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	counts, total := h.snapshot()
	// Export every other bound (factor 2) to keep the series count modest.
	buckets := make(map[float64]uint64, histBuckets/2)
	var cum uint64
	for i, n := range counts {
		cum += n
		if i%2 == 0 && i < histBuckets-1 {
			buckets[float64(histBounds[i])/1e9] = cum
		}
	}
	return prometheus.MustNewConstHistogram(d, total, float64(h.sumNS.Load())/1e9, buckets, labels...)
}

// Histogram times events in the cache's latency buckets (√2 apart, from
// 64 ns), for other layers' latencies (FUSE reads) to be summarised the same
// way. The zero value is ready; safe for concurrent use.
type Histogram struct{ h histogram }

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) { h.h.observe(d) }

// Latency summarises the durations recorded so far.
func (h *Histogram) Latency() Latency { return h.h.latency() }

// Collector exports the histogram to Prometheus, in seconds, as name.
func (h *Histogram) Collector(name, help string) prometheus.Collector {
	return histCollector{h: h, d: prometheus.NewDesc(name, help, nil, nil)}
}

type histCollector struct {
	h *Histogram
	d *prometheus.Desc
}

func (c histCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (c histCollector) Collect(ch chan<- prometheus.Metric) { ch <- c.h.h.metric(c.d) }
