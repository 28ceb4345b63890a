// Package azstore is deltafs's Azure backend: a Delta table under a prefix
// of an Azure Blob Storage container (also an ADLS Gen2 account, whose
// data the Blob API serves alike), behind the storage.Storage interface,
// on the official SDK (azblob, azidentity). It registers the schemes
// abfss, abfs, az, wasbs and wasb with storage.Register, so loading it
// (package table loads every backend, table/backends.go) makes
// storage.Open work for every form users paste from Spark and fsspec.
//
// # Locations
//
//	abfss://container@account.dfs.core.windows.net/path/to/table
//	wasbs://container@account.blob.core.windows.net/path/to/table
//	az://container/path/to/table      (also abfss://container/path: fsspec's form)
//
// The table key k is the blob "path/to/table/k". abfss:// tables are read
// through the Blob endpoint of the same account (account.dfs.SUFFIX gives
// https://account.blob.SUFFIX, so sovereign clouds work as pasted); abfs://
// and wasb:// use plain http. A location without an account takes it from
// AZURE_STORAGE_ACCOUNT_NAME (or AZURE_STORAGE_ACCOUNT), else from the
// connection string. Locations with a password, a query (a SAS token
// belongs in AZURE_STORAGE_SAS_TOKEN) or a fragment are refused, without
// echoing them. Location() is the location as given, without a trailing
// slash.
//
// # Endpoint and credentials
//
// The Blob service URL is --azure-endpoint (Options.Endpoint), else the
// BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING (or the one its
// AccountName, DefaultEndpointsProtocol and EndpointSuffix give;
// UseDevelopmentStorage=true is Azurite's default account on
// 127.0.0.1:10000), else the location's host, else
// https://ACCOUNT.blob.core.windows.net. Emulators use a path-style URL,
// http://127.0.0.1:10000/devstoreaccount1.
//
// Credentials, first found wins: --azure-anonymous (no credentials: public
// containers); AZURE_STORAGE_CONNECTION_STRING (its AccountKey, else its
// SharedAccessSignature; a connection string for another account than the
// location's is refused); AZURE_STORAGE_SAS_TOKEN; AZURE_STORAGE_KEY (or
// AZURE_STORAGE_ACCOUNT_KEY); else an Azure identity through azidentity's
// DefaultAzureCredential: the environment's service principal
// (AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET or a
// certificate), workload identity, managed identity, the Azure CLI's
// login (`az login`), the Azure Developer CLI's. An identity is asked for
// a token once at open, so that no usable credential fails there with one
// line ("no usable Azure credentials (...)"). Identities need https
// endpoints (the SDK refuses bearer tokens over http).
//
// A catalog's vended SAS (Options.Credentials, storage.CredentialSource:
// uc:// tables) replaces the whole chain: a per-retry policy asks the
// source on every attempt and appends its SAS to the query, so a renewed
// SAS is used from the next request on. The source's refusal is not
// retried and is the error's reason ("...: Unity Catalog refuses read
// credentials (HTTP 403 ...)").
//
// # Contract (on top of package storage's)
//
//   - List is List Blobs (flat, Prefix, every page). The Blob API has no
//     start-after: keys at or before startAfter are dropped here. Keys
//     ending in '/' (folder markers, hierarchical-namespace directories)
//     are not listed. A prefix without blobs is an empty list.
//   - Stat is Get Blob Properties; ReadAt is one Get Blob with a range.
//     The body must be exactly the bytes asked for (Content-Range and
//     Content-Length are checked, the body read in full), else the attempt
//     failed and is retried: a body cut short is never returned as data.
//   - Identity pinning, as in s3store: the first Stat or read of a key
//     records its size and ETag; later Stats are answered from the pin,
//     later reads send If-Match and check every response; a change fails
//     with storage.ErrChanged. _delta_log/_last_checkpoint is not pinned
//     (Options.Mutable). A Put forgets the key's pin.
//   - Put is Put Blob (one request, a block blob). Put-if-absent sends
//     If-None-Match: *, which the Blob service applies atomically: an
//     existing blob answers 409 BlobAlreadyExists, which wraps
//     storage.ErrExist, so two `deltafs import`s never both commit one
//     version. A conditional put whose earlier attempt may have landed is
//     read back and counts as done when the blob holds its bytes.
//   - ReadRanges (storage.RangeReader) merges ranges closer than
//     Options.CoalesceGap (64 KiB) into one GET of at most MaxCoalesce
//     (16 MiB), with storage.ReadCoalesced, as s3store does; the sample
//     layer's read-ahead goes through it.
//
// # Errors
//
// Failures are *Error values, one line naming the blob (or the table for
// the container, credentials and endpoint) and the cause in words, ending
// with the operation and the service's status and error code:
// "az://c/t/k: object does not exist", "az://c/t: container c does not
// exist in account a (ListBlobs, HTTP 404 ContainerNotFound)",
// "...: invalid credentials: ...", "...: access denied (check the
// credentials: ...)", "...: cannot connect to the Azure endpoint
// https://a.blob.core.windows.net (connection refused); gave up after 5
// attempts", "...: the service is throttling requests; gave up after 5
// attempts". A missing container, refused credentials and an unreachable
// endpoint are table-wide (storage.IsTableWide): a missing container never
// reads as an empty log.
//
// No message or log line holds a secret: they are built from status and
// error codes and network errors without the request's URL (a SAS token
// travels in its query); the SDK's own logging is off; and every message
// passes a last filter that removes the store's key, SAS token and
// AZURE_CLIENT_SECRET.
//
// # Retries and timeouts
//
// Every request gets at most Options.MaxAttempts attempts (default 5;
// --azure-retries 4), on throttling (429, 503 ServerBusy), 408 and 5xx,
// connection errors and timeouts, with the SDK's backoff: before attempt
// n+1, min(RetryDelay × (2^n − 1), MaxBackoff) ± 20% (1 s and 4 s by
// default), or the service's Retry-After up to MaxBackoff. The SDK retries
// lists, properties and puts; GETs are retried here, because a GET can
// also fail while its body is read, after the SDK has returned, and both
// failures share one attempt budget. Options.RequestTimeout (default 30 s;
// --azure-timeout) bounds each attempt from sending the request to the
// last byte of its body, so a stalled answer fails that attempt and is
// retried; Options.ConnectTimeout (5 s) bounds connecting. Retries are
// logged (the first of a minute at info level, the others at debug).
//
// # Endpoint health (fail fast while down)
//
// As in s3store, the store keeps one view of its endpoint for all
// requests (remote.Health): the transport (httpClient.Do) tells it every
// attempt's outcome. When at least two attempts in a row, with no answer
// since the first was sent, have failed to reach the endpoint (refused,
// reset, no connection within ConnectTimeout, no answer within
// RequestTimeout) for Options.DownAfter (default 10 s; --down-after), the
// endpoint is declared down: every attempt then fails at once in the
// transport with an error the SDK's retry policy does not retry
// (NonRetriable), and GET backoffs end at once, so a request fails with
// "az://c/t: endpoint https://a.blob.core.windows.net unreachable since
// 12:00:03 (connection refused); retrying every 5s" instead of paying its
// retries (about 12 s). A probe (a one-key List Blobs) every
// Options.ProbeInterval (5 s) notices when it answers again; any answer
// (a 403 or 503 too) counts. One log line says it went down (warning),
// one that it is back (info). A negative DownAfter turns this off.
//
// At most Options.MaxConcurrency (64) requests are in flight per store.
// Stats counts requests by kind, retries, bytes fetched and coalesced
// ranges (the mount's .deltafs/stats "azure"). Close cancels everything in
// flight and fails later calls; a mount closes its store as it unmounts.
//
// # Tests
//
// The tests run Azurite (storage/azstore/aztest), which serves the Blob API only:
// abfss:// locations are read through it, as on Azure.
package azstore
