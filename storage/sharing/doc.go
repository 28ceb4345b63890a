// Package sharing reads Delta tables shared with Delta Sharing
// (PROTOCOL.md of delta-io/delta-sharing): a location
// PROFILE.share#share.schema.table, for every command that takes a
// table. Loading it claims such locations (storage.RegisterMatch);
// package table loads every backend (table/backends.go).
//
// # What it does
//
// A profile (PROFILE.share) or a share (PROFILE.share#SHARE) names many
// tables: the listing endpoints (list.go: List Shares, List Schemas in a
// Share, List Tables in a Schema, List all Tables in a Share, every page,
// bounded) list them for a catalog mount (Browser, table.OpenCatalog),
// each table then opened as PROFILE.share#share.schema.table.
//
// The share is presented as a read-only table directory (a
// storage.Storage), so that log replay, samples and the mount are the
// same as for a table on disk:
//
//   - The profile file (shareCredentialsVersion 1, or 2 with type
//     bearer_token or oauth_client_credentials) gives the endpoint and the
//     bearer token (credentials.go). A bearer token past its
//     expirationTime is refused before any request; one warning is logged
//     a day before. An OAuth profile's token comes from its tokenEndpoint
//     (the client credentials grant of RFC 6749, the client id and secret
//     as HTTP Basic authentication, golang.org/x/oauth2): fetched at open,
//     renewed once two thirds of its life have passed (never more often
//     than once a second), and renewed at once when the server refuses it.
//     A failing renewal backs off from 1 s to 1 min while the old token,
//     until it expires, serves; one line says it fails, one that it
//     recovered. The token endpoint is asked without redirects, and only
//     over https when the endpoint is https.
//   - Query Table Version (GET .../version) gives the current version.
//     Each version N is a snapshot query (POST .../query, {"version": N})
//     with delta-sharing-capabilities: responseformat=delta and the
//     reader features deltafs reads (deletionvectors, columnmapping, ...).
//     _delta_log/N.json is synthesised: a commitInfo with the version's
//     timestamp, the protocol and metaData when they changed, removes for
//     the files that left and adds for those that came since N-1 (keyed,
//     as Delta reconciles them, by path and deletion vector). Versions are
//     queried once (4 at a time) when the table is opened, and new ones
//     as deltafs looks for commits.
//   - A data file's key is its URL's path below the table's location
//     (metaData.location), which is the path the table's own log has; the
//     add's path is that key, escaped as Spark escapes paths. Deletion
//     vectors come as pre-signed URLs (storageType p) and are keyed alike.
//   - Data files are read with ranged GETs on their pre-signed URLs
//     (ranges less than 1 MiB apart in one GET). A URL is used while more
//     than a third of its lifetime (to expirationTimestamp) is left; then
//     the version it came from is queried again, once for all its files,
//     before the read. A URL refused anyway (403) is renewed once and the
//     read tried again. A version is queried for fresh URLs once a second
//     at most: URLs that are stale when they come (an expiry in the past)
//     are used as they are, and a URL refused right after its renewal
//     fails the read, saying so.
//
// # Hostile servers
//
// Neither the sharing server nor the file servers behind its URLs are
// trusted to behave (bounds.go). A query's answer is bounded: 1 GiB, 64
// MiB a line, its whole within ten times the timeout (--sharing-timeout,
// default 60 s) and no pause longer than one; a request that gets no
// answer within the timeout is tried 3 times. An answer the server
// paginates is one answer for these bounds, of 10,000 pages at most; a
// page token given twice (pages without end) fails it, and every page
// repeats the first one's protocol and metaData. At open, the latest
// 10,000 versions at most are queried (one query each), the first of
// them served as a checkpoint; a share that gains more than that between
// two looks fails the look. A line must be the
// protocol's: the right JSON types (an error names the field, never a Go
// type), one action a line, one protocol, a unique non-empty file id, a
// non-negative size, as many files as metaData.numFiles when given, and an
// https URL (http only when the endpoint itself is http; file://, s3://
// and the like are never read; a redirect from https to another scheme is
// refused). An answer cut short (the connection closed before its end)
// fails the version. A file server must serve the size the add action
// announced (Content-Range, Content-Length, every byte of a range inside
// it) and answer a ranged GET whole within the timeout. Each of these is
// one line naming the table, the version (or the file) and the cause.
// Bytes that differ at the announced size cannot be told here (the
// protocol shares no checksum); the Parquet reader's checks stand.
//
// # History
//
// A share may not share history: its server refuses queries by version
// (400 or 403). Then the current version alone is served, as a
// checkpoint, and the older versions are listed but every read of one
// fails with one line: "the share does not allow history: only the
// latest version can be read (the server: ...)". When only the first
// versions are refused (the share's history starts later), the first
// version served is written as a checkpoint and the older ones are not
// listed, as in a table whose log was cleaned up.
//
// # Secrets
//
// The token is only sent in the Authorization header, and only to the
// endpoint's origin: an API answer redirecting to another scheme, host or
// port fails the request naming both origins (secret.CheckRedirect).
// Pre-signed URLs are fetched without it, and may redirect to another
// origin, never away from https. Pre-signed URLs go only as request URLs:
// no error, log line, metric or statistic holds either (transport errors
// are reported without their URL; a server message that echoes the token
// has it replaced by ***, see package secret).
//
// # Deviations and choices
//
//   - A pre-signed URL on another host than the endpoint is read (that is
//     what pre-signed URLs are: S3, ADLS, GCS); only its scheme is
//     checked.
//   - No official Go client exists (delta-sharing ships Python, Spark,
//     Java and Rust clients); two endpoints are plain net/http here.
//   - Both response formats are read (parquetformat.go): a server that
//     ignores the capabilities header answers in the parquet format, whose
//     files, partition values, statistics and sizes make the same adds;
//     what it cannot express (deletion vectors, column mapping) is refused
//     by name.
//   - The protocol shares no commitInfo: a shared commit has no operation.
//   - A snapshot query gives a version's timestamp on its files only: a
//     version with no live file gets the timestamp of the version before
//     it (after it, for the first), and without history the current
//     version is as old as the moment deltafs first saw it.
//   - Without metaData.location (it is optional), a data file is keyed
//     _shared/<file id>/<name>: the data is the same, but sample names
//     derived from the file's path differ from the table's own.
//   - startingVersion/changes queries are not used: they carry data
//     change files only (not an OPTIMIZE's), which would leave replaced
//     files in the synthesised log; snapshot queries give each version's
//     exact files. The cost is one query per version at open.
//   - Queries offer asyncquery=true: a server that takes it answers with
//     a queryStatus whose queryId is polled (Get Query Info, from 50 ms
//     doubling to 2 s, within answerTimeouts timeouts) until the answer
//     comes; pending is the only status polled again, failed is the
//     server's message. An answer in pages (endStreamAction's
//     nextPageToken) is read page by page into one: every page's protocol
//     and metaData must be the first's, the version the same, the size
//     bound is for all pages together, and a token given twice is a loop.
//   - The profile type basic and refreshToken are not implemented: a
//     profile of another type is refused with a line naming it. PROTOCOL.md describes only profile version 1; version 2
//     follows the fields delta-io/delta-sharing's clients read
//     (tokenEndpoint, clientId, clientSecret, scope).
package sharing
