// Package sharing reads Delta tables shared with Delta Sharing
// (PROTOCOL.md of delta-io/delta-sharing): a location
// PROFILE.share#share.schema.table, for every command that takes a
// table. A blank import claims such locations (storage.RegisterMatch).
//
// # What it does
//
// The share is presented as a read-only table directory (a
// storage.Storage), so that log replay, samples and the mount are the
// same as for a table on disk:
//
//   - The profile file (shareCredentialsVersion 1, or 2 with type
//     bearer_token) gives the endpoint and the bearer token; a token past
//     its expirationTime is refused before any request.
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
// The token is only sent in the Authorization header, and pre-signed URLs
// only as request URLs: no error, log line, metric or statistic holds
// either (transport errors are reported without their URL; a server
// message that echoes the token has it replaced by ***).
//
// # Deviations and choices
//
//   - A pre-signed URL on another host than the endpoint is read (that is
//     what pre-signed URLs are: S3, ADLS, GCS); only its scheme is
//     checked.
//   - No official Go client exists (delta-sharing ships Python, Spark,
//     Java and Rust clients); two endpoints are plain net/http here.
//   - Only the delta response format is read: an answer in the parquet
//     format is refused with a line saying so (the specification lets the
//     caller decide how to handle it).
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
//   - The OAuth profile type (oauth_client_credentials), asyncquery and
//     refreshToken are not implemented: a profile of another type is
//     refused with a line naming it. deltafs asks for no pages (no
//     maxFiles), but follows a server that paginates anyway (Query).
package sharing
