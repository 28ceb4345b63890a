package remote

import "sync/atomic"

// Counters are a store's live Stats. Backends count requests by kind in
// their transport; every attempt counts.
type Counters struct {
	Gets, Heads, Lists, Puts, Deletes, Other atomic.Int64
	Retries, Bytes, Coalesced                atomic.Int64
	InFlight, MaxInFlight                    atomic.Int64
}

// Stats are a store's counters since it was opened.
type Stats struct {
	// HTTP requests sent, by kind (GET of an object, HEAD or metadata,
	// list, PUT, DELETE, other); every attempt counts.
	Gets, Heads, Lists, Puts, Deletes, Other int64
	// Retries: attempts after the first of an operation (any kind).
	Retries int64
	// BytesFetched: object bytes received in GET bodies, including the gaps
	// read by coalescing and bodies of failed attempts.
	BytesFetched int64
	// RangesCoalesced: ranges of ReadRanges served by a GET issued for
	// another range.
	RangesCoalesced int64
	// InFlight and MaxInFlight: HTTP requests holding a concurrency slot now
	// and at most so far.
	InFlight, MaxInFlight int64
	// Pinned: keys whose identity (size and ETag, or generation) is pinned.
	Pinned int
}

// Requests is the total number of HTTP requests sent.
func (st Stats) Requests() int64 {
	return st.Gets + st.Heads + st.Lists + st.Puts + st.Deletes + st.Other
}

// Snapshot returns the counters as Stats, with pinned keys pinned.
func (c *Counters) Snapshot(pinned int) Stats {
	return Stats{
		Gets: c.Gets.Load(), Heads: c.Heads.Load(), Lists: c.Lists.Load(),
		Puts: c.Puts.Load(), Deletes: c.Deletes.Load(), Other: c.Other.Load(),
		Retries: c.Retries.Load(), BytesFetched: c.Bytes.Load(),
		RangesCoalesced: c.Coalesced.Load(),
		InFlight:        c.InFlight.Load(), MaxInFlight: c.MaxInFlight.Load(),
		Pinned: pinned,
	}
}

// CountRetries counts the attempts of one operation after its first.
func (c *Counters) CountRetries(attempts int) {
	if attempts > 1 {
		c.Retries.Add(int64(attempts - 1))
	}
}

// Kind is the kind of an HTTP request, as the Stats count it.
type Kind int

const (
	KindOther Kind = iota
	KindGet        // GET of an object's bytes
	KindHead       // HEAD or metadata
	KindList
	KindPut
	KindDelete
)

// Count counts one request (one attempt) of kind k.
func (c *Counters) Count(k Kind) {
	switch k {
	case KindGet:
		c.Gets.Add(1)
	case KindHead:
		c.Heads.Add(1)
	case KindList:
		c.Lists.Add(1)
	case KindPut:
		c.Puts.Add(1)
	case KindDelete:
		c.Deletes.Add(1)
	default:
		c.Other.Add(1)
	}
}

// Reporter is a store that counts its requests, as every cloud backend
// does: a mount's .deltafs/stats shows its Stats under its Service name
// ("s3", "azure", "gcs"), so the commands need not know the backends.
type Reporter interface {
	Service() string
	Stats() Stats
}
