// Package unity opens Delta tables by name from Unity Catalog (Databricks
// and Unity Catalog OSS alike): uc://catalog.schema.table, for every
// command that takes a table. Loading it registers the "uc" scheme with
// storage.Register; package table loads every backend (table/backends.go).
//
// # What it does
//
//  1. Finds the catalog and a token (ResolveConfig): --uc-endpoint and
//     --uc-token, the profile of --uc-profile, UC_ENDPOINT and UC_TOKEN,
//     DATABRICKS_HOST and DATABRICKS_TOKEN, then a profile of
//     ~/.databrickscfg (DATABRICKS_CONFIG_PROFILE, else DEFAULT;
//     DATABRICKS_CONFIG_FILE moves the file). The endpoint is the server
//     (https://workspace, http://localhost:8080); the API lives under
//     /api/2.1/unity-catalog on both.
//  2. Resolves the table: GET /tables/{full_name} gives storage_location
//     and table_id (a managed table lives under
//     .../__unitystorage/catalogs/<id>/tables/<uuid>). A table whose
//     data_source_format is not DELTA is refused.
//  3. Vends read credentials: POST /temporary-table-credentials with
//     {"table_id", "operation": "READ"} gives AWS session credentials, an
//     Azure user delegation SAS or a GCP OAuth token, and
//     expiration_time (epoch ms).
//  4. Opens the storage location with storage.Open and
//     storage.Options.Credentials set to the vended credentials (Vended),
//     which the backend then uses for every request, and nothing else.
//     s3a:// and s3n:// locations are read as s3://.
//
// # Catalog-managed tables
//
// Open also calls the Delta REST API's loadTable (delta.yaml, GET
// /delta/v1/catalogs/{catalog}/schemas/{schema}/tables/{table}): a table
// whose properties carry delta.feature.catalogManaged is catalog-managed
// (the Delta protocol's "Catalog-managed tables"), and its storage is
// then a catalogLog (commits.go) that presents the log as the catalog has
// it: at every listing of the log it asks loadTable again (within
// LoadTimeout), lists each ratified commit v of the answer as
// _delta_log/<v>.json read from its staged file, and lists nothing past
// latest-table-version. Log replay accepts the catalogManaged feature
// from such a storage only (storage.CatalogLog, snapshot.Options
// .CatalogManaged); by path it stays refused with a hint to use uc://.
// A catalog without the Delta REST API (404 other than a missing table,
// 405, 501, or 400 UnsupportedTableFormatException) serves tables from
// their logs alone.
//
// Fail closed: a ratified commit whose staged file is missing, of
// another size than file-size, named for another version or not a
// <version>.<uuid>.json name fails that version (and the later ones) as
// corrupt; so does a published _delta_log/<v>.json that is not byte for
// byte the catalog's commit v (the protocol makes the catalog's commit
// authoritative; a published commit is a copy of it, so a difference is a
// corrupt table, not a choice between two). An answer that skips a
// version, ratifies one twice, contradicts its latest-table-version (or
// gives none with no commits), goes back, or re-ratifies a version as
// another file is refused: at open, the table; later, that listing (the
// last accepted answer stays). A refusal of loadTable (401, 403, 404: the
// table dropped) fails every request of the table at once, until
// loadTable answers again. Inline commits (content stored by the catalog)
// are not part of delta.yaml and are not read.
//
// The storage keeps the uc:// name in messages (Table.Location); the
// backend's own errors name the object's cloud location.
//
// # Credentials that outlive a training run
//
// Vended renews the credentials in the background once two thirds of
// their lifetime has passed, but never sooner than 1 s
// (MinRenewInterval) after the last renewal, and logs each renewal at
// info level; a request is never signed with expired credentials (nor in
// their last half second) and never waits for a renewal. Credentials that come dead (expiring in the
// past or less than 1 s away: a lying catalog, or a clock that is wrong)
// fail the open, and a renewal that brings them counts as failed. A
// failed renewal (the catalog unreachable, an error, dead credentials, or
// a refusal) is tried again after 1 s, then 2 s, 4 s, ... up to 1 minute
// (MaxRenewBackoff); the old credentials serve while they last, and past
// their expiry requests fail with EIO, naming the cause, until a renewal
// works. The first failure is one warning, the recovery one info line. A
// renewal the catalog refuses (401, 403, 404: a revoked grant, an expired
// token, a dropped table) fails every later request at once (EIO on a
// mount, the catalog's answer in the line); reads work again, without a
// remount, once the catalog vends again.
//
// # Bounds
//
// A location must be a storage location: a storage_location that is a
// uc:// name (the table itself, or another), a share, a scheme no backend
// reads (hdfs://) or a relative path is refused in one line naming the
// table and the location (storage.CheckStorageLocation). Every call has a
// 30 s limit per attempt (connect to the answer's last byte) and 4
// attempts at most, retrying only connection failures, 429 and 5xx, with
// jittered pauses of up to 1, 2 and 4 s; an answer is at most 16 MiB.
//
// # Secrets
//
// The token is only ever sent in the Authorization header, and only to
// the catalog's origin: a redirect to another scheme, host or port, or
// from https to http, fails the call naming both origins
// (secret.CheckRedirect). No message or log line at any level holds the
// token or a vended secret: both are registered with the secret package,
// and storage.Credentials prints as "AWS session credentials valid until
// ...". The catalog's error messages are quoted, redacted (a catalog that
// echoes the request's header gets the token replaced by ***).
//
// # Deviations and choices
//
//   - all.yaml defines no error body; errors are read as Unity Catalog OSS
//     and Databricks send them, {"error_code": ..., "message": ...}.
//   - getTable and generateTemporaryTableCredentials of all.yaml are
//     used, and loadTable of delta.yaml (for catalog-managed tables); the
//     Delta REST API's config and credentials endpoints are not: getTable
//     and the temporary credentials already give what a reader needs, on
//     Databricks and OSS alike.
//   - No official Go client: the Databricks SDK for Go
//     (databricks-sdk-go) covers Databricks' whole API with dozens of
//     dependencies, and Unity Catalog OSS publishes no Go client; two
//     calls are plain net/http here. ~/.databrickscfg is read with
//     gopkg.in/ini.v1, the parser that SDK uses.
//   - Azure and GCS: the vended SAS and token reach storage.Options
//     .Credentials like AWS sessions; azstore and gcsstore take them as
//     described at storage.CredentialSource (the SAS in every request's
//     query, the token in every request's Authorization header).
package unity
