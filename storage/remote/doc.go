// Package remote holds what the object-store backends (storage/s3store,
// storage/azstore, storage/gcsstore) share and would otherwise write three
// times: identity pins (Pins, Pin), per-operation attempt counting (Op,
// WithOp), the request counters and their snapshot (Counters, Stats), the
// HTTP transport and the concurrency slot a request holds until its body is
// closed (NewTransport, Counters.Acquire, Body, Closed), the one-line error
// form (Message, Unwrap, Timeout, IOReason), key checks (CheckKey), list
// paging (Listing), the pinned read loop, its coalesced form and
// conditional-put verification (ReadPinned, Pinned.ReadRanges,
// Pinned.Holds), the checks of a ranged GET's answer (RangedGet: ignored
// Range, another range, a short body, another version), request kinds
// (Kind, Counters.Count), s3:// and gs:// locations (ParseBucket),
// registration (Register), the tuning every backend's Options embeds
// (Tuning, with its defaults) and the endpoint circuit breaker (Health:
// endpoint failures for DownAfter declare the endpoint down, attempts then
// fail at once with *Unreachable until a probe gets an answer;
// HealthConfig says what is the store's).
//
// Each backend keeps what is its cloud's: building requests, its SDK's
// retry hooks (where they ask Health), its transport (which tells Health
// each attempt's outcome), its probe request, its error codes and the
// words of its messages.
package remote
