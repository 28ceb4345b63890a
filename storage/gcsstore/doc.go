// Package gcsstore is deltafs's Google Cloud Storage backend: a Delta table
// under a GCS prefix, behind the storage.Storage interface, on Google's
// SDK (cloud.google.com/go/storage, HTTP: the JSON API for metadata,
// lists and uploads, the XML API for reads, as the SDK does). It registers
// the "gs" scheme with storage.Register, so loading it (package table
// loads every backend, table/backends.go) makes
// storage.Open("gs://bucket/prefix/to/table", opts) work.
//
// # Locations and credentials
//
// gs://bucket/prefix/to/table maps a table key k to the object
// "prefix/to/table/k" (gs://bucket maps k to k). Locations with
// credentials, a port, a query or a fragment are refused. Location() is
// gs://bucket/prefix.
//
// A catalog's vended token (Options.Credentials,
// storage.CredentialSource: uc:// tables) replaces the chain below, emulator
// and Anonymous included: an oauth2.TokenSource asks the source on every
// request (no caching beyond the source's), so a renewed token is used
// from the next request on; the source's refusal is not retried and is
// the error's reason.
//
// Credentials are Google's application default credentials
// (golang.org/x/oauth2/google.FindDefaultCredentials): the key file named
// by GOOGLE_APPLICATION_CREDENTIALS (a service-account key, or any ADC
// JSON: authorized user, external account), else gcloud's
// application_default_credentials.json (`gcloud auth application-default
// login`), else the metadata server on Google Cloud (GCE_METADATA_HOST
// moves it). A first access token is fetched when the store is opened, so
// that missing or refused credentials fail there with one line; tokens
// are then renewed as they expire. --gcs-anonymous sends no credentials
// (public buckets).
//
// Endpoints: STORAGE_EMULATOR_HOST (host:port or a URL) points the store
// at an emulator such as fake-gcs-server without authentication, as it
// does Google's SDK; --gcs-endpoint http(s)://host[:port] (a full JSON API
// URL ending in /storage/v1/ also works) points it at another endpoint
// (a private or regional endpoint, an emulator behind a proxy) and keeps
// requests authenticated unless --gcs-anonymous. The flag wins over the
// variable.
//
// # Contract (on top of package storage's)
//
//   - List is objects.list with prefix and startOffset over every page
//     (startOffset is inclusive: keys are filtered again on the client, and
//     sorted if needed). A prefix without objects is an empty list; folder
//     markers (names ending in '/') are not listed.
//   - Identity pinning: the first Stat or read of a key records its
//     generation and size (ObjectInfo.ETag is the generation). Later Stats
//     are answered from the pin; every read asks for the pinned generation
//     and checks the size in the answer, so an object replaced or deleted
//     after its first read fails with an error wrapping storage.ErrChanged
//     ("object changed since it was first read ...: generation G no longer
//     exists"), never with bytes of two versions. Keys for which
//     Options.Mutable is true (by default only _delta_log/_last_checkpoint)
//     are read at their current generation. A Put forgets the key's pin.
//   - ReadAt is one ranged read; the body must hold exactly the bytes asked
//     for. The SDK reopens a body cut short at the byte where it stopped;
//     a body still short is an error, never data. ReadRanges coalesces
//     neighbouring ranges (storage.ReadCoalesced: gaps up to 64 KiB, reads up to
//     16 MiB) into reads that run in parallel, as the S3 store does, so the
//     mount's read-ahead costs one request per batch of pages.
//   - Put uploads from memory with the data's CRC32C, which the server
//     checks. Put-if-absent adds ifGenerationMatch=0: a second writer gets
//     412 and an error wrapping storage.ErrExist, so two `deltafs import`s
//     never both commit one version. A conditional put that was retried
//     after an attempt that may have landed (412 on the retry) reads the
//     object back and succeeds if it holds exactly the data.
//   - Not found wraps storage.ErrNotExist; so does a missing bucket
//     ("bucket b does not exist"), which is table-wide
//     (storage.IsTableWide).
//
// # Errors
//
// Failures are *Error values: one line that names the object (or the
// table, for credentials, the bucket and the endpoint), says what went
// wrong in words, and ends with the operation and the cause:
// "gs://b/t: invalid credentials: the token endpoint refused them (...)",
// "gs://b/t: invalid credentials: the server refused the access token
// (...)", "gs://b/t: access denied (check the credentials' roles on the
// bucket ...)", "gs://b/t: no usable Google credentials (...)",
// "gs://b/t: bucket b does not exist", "gs://b/t: cannot connect to the
// GCS endpoint http://host:port (connection refused); gave up after 5
// attempts", "gs://b/t/k: the server is throttling requests; gave up after
// 5 attempts". Neither errors nor log records hold a token or a key: the
// store never logs requests or headers, answers from the token endpoint
// are reduced to their error code, and locations with user:secret@ are
// refused without being echoed. A done context ends an operation at once
// with an error matching the context's error; after Close, requests fail
// with "request abandoned: the store was closed".
//
// # Retries and timeouts
//
// The SDK's retryer, tuned: at most Options.MaxAttempts attempts (default
// 5, --gcs-retries 4), with jittered exponential backoff (the delay before
// attempt n+1 is uniform in (0, min(2^(n-1) s, MaxBackoff)], MaxBackoff 4
// s), on 408, 429, 5xx, refused and reset connections, cut bodies and
// attempt timeouts; every request deltafs sends is safe to repeat
// (RetryAlways). The first retry of a minute is logged at info level
// ("gcs: a request failed; retrying" op=... key=... attempt="2 of 5"
// cause="HTTP 503: ..."), the others at debug level.
//
// Options.RequestTimeout (default 30 s, --gcs-timeout) bounds each
// attempt from sending the request to reading the last byte of its body;
// Options.ConnectTimeout (5 s) bounds connecting. Each operation is also
// bounded as a whole by MaxAttempts × (RequestTimeout + MaxBackoff) plus
// ConnectTimeout, so that a server that answers and then stalls every
// body cannot keep a read reopening for ever.
//
// # Endpoint health (fail fast while down)
//
// As in s3store, the store keeps one view of its endpoint for all
// requests (remote.Health): the meter, the transport under authentication,
// tells it every attempt's outcome (an attempt the http.Client's Timeout
// cut is "no answer within RequestTimeout"). When at least two attempts in
// a row, with no answer since the first was sent, have failed to reach the
// endpoint for Options.DownAfter (default 10 s; --down-after), the
// endpoint is declared down: every attempt then fails at once in the
// meter, and shouldRetry, the SDK's retry decision, gives up, so a request
// fails with "gs://b/t: endpoint https://storage.googleapis.com
// unreachable since 12:00:03 (connection refused); retrying every 5s"
// instead of spending its attempts (about 15 s). A probe (a one-key
// objects.list, not retried) every Options.ProbeInterval (5 s) notices when
// it answers again; any answer counts. One log line says it went down
// (warning), one that it is back (info). A negative DownAfter turns this
// off.
//
// # Concurrency
//
// At most Options.MaxConcurrency (64) HTTP requests are in flight per
// store; a response holds its slot until its body is closed. Stats counts
// requests by kind, retries, object bytes fetched, coalesced ranges and
// the peak concurrency (a mount serves them in .deltafs/stats as "gcs").
// Close cancels everything in flight and closes the connections; a mount
// closes its store as it unmounts.
package gcsstore
