// Package s3store is deltafs's S3 backend: a Delta table under an S3 (or
// S3-compatible) prefix, behind the storage.Storage interface. It registers
// the "s3" scheme with storage.Register, so loading it (package table
// loads every backend, table/backends.go) makes
// storage.Open("s3://bucket/prefix/to/table", opts) work.
//
// # Locations, keys and configuration
//
// s3://bucket/prefix/to/table maps a table key k to the object
// "prefix/to/table/k" (s3://bucket maps k to k). Locations with
// credentials, a query or a fragment are refused. Location() is
// s3://bucket/prefix, never with credentials.
//
// Configuration is the AWS SDK's (config.LoadDefaultConfig): credentials
// from the environment, AWS_PROFILE and the shared files, web identity,
// container credentials or IMDS; region from --s3-region, else the AWS
// configuration, else us-east-1; endpoint from --s3-endpoint, else
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS. --s3-path-style for
// MinIO-like servers; --s3-anonymous sends unsigned requests (public
// buckets). Credentials are retrieved once when the store is opened, so
// that their absence is reported at open. Request and response checksums
// are computed only where S3 requires them (WhenRequired), which keeps
// plain-http endpoints and servers without checksums working and quiet.
//
// # Contract (on top of package storage's)
//
//   - List is ListObjectsV2 with Prefix and StartAfter over every page;
//     keys are filtered (and, if needed, sorted) again on the client since
//     some servers ignore StartAfter. A prefix without objects is an empty
//     list, not ErrNotExist. Folder markers (keys ending in '/') are not
//     listed.
//   - Stat is HeadObject (size, ETag, LastModified; ObjectInfo.ETag is
//     the ETag without its quotes, as in List). ReadAt is one GET with
//     Range: bytes=off-end; the body must be exactly the bytes asked for
//     (Content-Range and Content-Length are checked, the body is read in
//     full), else the attempt failed and is retried: a body cut short is
//     never returned as data. io.EOF follows io.ReaderAt.
//   - Identity pinning: the first Stat or ReadAt of a key records its size
//     and ETag. Later Stats are answered from the pin (no request); later
//     reads send If-Match with the pinned ETag and check the size and ETag
//     of every response. A 412, a different ETag or size, or a 416 inside
//     the pinned size fails with an error wrapping storage.ErrChanged that
//     names the key: bytes of two versions of an object are never mixed.
//     Keys for which Options.Mutable is true are not pinned (by default
//     only _delta_log/_last_checkpoint, which Delta rewrites in place). A
//     Put forgets the key's pin. Pins live as long as the store (about 100
//     bytes per key).
//   - Not found (NoSuchKey, 404) wraps storage.ErrNotExist; so does a
//     missing bucket ("bucket b does not exist").
//   - Put is PutObject from memory; put-if-absent sends If-None-Match: *
//     and maps 412 to storage.ErrExist. Before the first conditional put a
//     store probes once that the server honours If-None-Match and refuses
//     conditional puts if it does not; see Put.
//
// # Errors
//
// Failures are *Error values whose message says what is wrong in words:
// "s3://b/t/k: object does not exist", "s3://b/t: access denied (check
// credentials ...)", "s3://b/t: bucket b does not exist", "s3://b/t:
// invalid credentials: ...", "s3://b/t: no usable AWS credentials (...)",
// "s3://b/t/k: the server is throttling requests; gave up after 5
// attempts (...)". Denied access, bad or expired credentials, a missing
// bucket or object, and a changed object are permanent: they are not
// retried (Error.Permanent). While the endpoint is down (see below) every
// request fails at once with "s3://b/t: endpoint http://host:port
// unreachable since 12:00:03 (connection refused); retrying every 5s".
// After Close, requests fail with "request abandoned: the store was
// closed". Neither errors nor log records contain credentials: the SDK
// signs requests but never prints keys, request logging is off, and
// locations with user:secret@ are refused without being echoed. A done
// context ends an operation at once with an error matching the context's
// error. The mount turns ErrNotExist into ENOENT and everything else into
// EIO, whatever errno the cause carries.
//
// # Logging
//
// Through Options.Logger (default slog.Default()): the first retry of a
// minute at info level, saying what is retried and why ("s3: a request
// failed; retrying" op=GetObject key=... attempt="2 of 5" cause="connection
// refused"), the others at debug level; likewise an attempt still without
// an answer after Options.SlowAnswer (5 s) ("s3: no answer from the
// endpoint yet; still waiting"), so that a silent endpoint is reported in
// seconds rather than after RequestTimeout; the endpoint declared down (one
// warning) and up again (one info line).
//
// # Retries and timeouts
//
// Every request is retried by the SDK's standard retryer, tuned: at most
// Options.MaxAttempts attempts (default 5, the first included), with
// jittered exponential backoff (the delay before attempt n+1 is uniform in
// [0, min(2^(n-1) s, MaxBackoff)), MaxBackoff default 4 s), on throttling
// (503 SlowDown, 429 and the SDK's throttle codes), 5xx, connection
// errors (refused, reset, closed) and timeouts. The SDK's retry quota is
// off: MaxConcurrency already bounds the load, and a quota would turn a
// brief outage of a busy mount into instant failures. GETs are retried by
// this package rather than the SDK, because a GET can also fail while its
// body is read (reset, stall, short body) after the SDK has returned; both
// kinds of failure share the one attempt budget.
//
// Options.RequestTimeout (default 30 s) bounds each attempt from sending
// the request to reading the last byte of its body (http.Client.Timeout),
// so a stalled response fails that attempt and is retried instead of
// hanging a read; Options.ConnectTimeout (default 5 s) bounds connecting
// (TCP and TLS), so a host that drops packets fails an attempt in seconds.
// A read therefore fails after at most about MaxAttempts × (RequestTimeout
// + MaxBackoff), sooner when the endpoint is declared down, and at once
// when its context is done or the store is closed.
//
// # Endpoint health (fail fast while down)
//
// The store keeps one view of its endpoint for all requests, a
// remote.Health shared with the Azure and GCS stores (health.go holds what
// is S3's: the retryer's check and the probe).
// An attempt that gets any HTTP answer (a 403, 404 or 503 is an answer)
// shows it up. An attempt that does not reach it (connection refused,
// reset or closed before an answer, no connection within ConnectTimeout,
// no answer within RequestTimeout, a name that does not resolve) is an
// endpoint failure, unless it was sent before the latest answer arrived
// (it met a broken connection, not a dead endpoint). When at least two
// endpoint failures in a row span Options.DownAfter (default 10 s;
// --down-after), counted from the sending of the first, the endpoint is
// declared down: every attempt, a new request or the retry of one in
// flight, then fails at once without touching the network, instead of
// paying its timeouts and backoff. A goroutine probes the endpoint every
// Options.ProbeInterval (5 s) with a one-key list, bounded by the interval;
// the first answer, to a probe or to an attempt still in flight, declares
// it up and requests work again, without reopening the store. A negative
// DownAfter turns this off (each request then has its retries).
//
// With the defaults, a command against a dead endpoint (refused) fails
// within about 15 s (5 attempts with backoff, or sooner once down), one
// against an endpoint that drops packets within about 20 s (5 s connect
// timeouts, down after 10 s), and one against an endpoint that accepts
// connections but never answers within about max(2 × RequestTimeout,
// DownAfter + RequestTimeout) plus backoff: a minute, with an info line
// after 5 s.
//
// # Concurrency and ranged reads
//
// At most Options.MaxConcurrency (default 64) HTTP requests are in flight
// per store; a GET holds its slot until its body is closed. ReadRanges
// reads many ranges of one object with few GETs: ranges closer than
// Options.CoalesceGap (64 KiB) are merged into one GET (up to MaxCoalesce,
// 16 MiB), and the GETs run in parallel. Stats exposes request counts by
// kind, retries, bytes fetched, coalesced ranges and the peak concurrency.
//
// Close ends the store: requests in flight (attempts, backoffs, bodies)
// are cancelled and their connections closed, later ones fail, the probe
// stops; no goroutine or connection is left behind. A mount closes its
// store as it unmounts, so that requests stuck on a dead or stalled
// endpoint do not hold the unmount.
package s3store
