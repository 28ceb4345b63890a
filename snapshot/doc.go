// Package snapshot replays a Delta Lake transaction log: given a table
// and a version (or a time), it produces the snapshot of the table at that
// version — protocol, metadata and schema, the commit's provenance, and the
// live data files with their partition values, row counts and deletion
// vectors. PROTOCOL.md of delta-io/delta is the authority; the shared notes
// on pitfalls of real tables explain the places where this package is
// careful.
//
// # Pipeline
//
// Reconstructing a version runs through one file per stage:
//
//   - logpath.go parses _delta_log file names with no I/O: commits
//     (n.json), classic, multi-part and UUID-named V2 checkpoints, log
//     compactions (x.y.compacted.json).
//   - listing.go lists the log from a version on (one sorted List with
//     startAfter), starting at the version _last_checkpoint names. The
//     hint may be stale or point at a missing file: then the whole log is
//     listed.
//   - segment.go keeps the listing (commits sorted by version, never
//     indexed by it: a stray name with a huge version costs one entry)
//     and chooses what to read for a version and validates it: the
//     newest complete checkpoint at or before it that is not untrusted (a
//     multi-part checkpoint with a missing part is ignored), then the
//     commits after it, which must run without a gap. It also finds the
//     earliest readable version of a log whose old commits were cleaned
//     up, and where listing again must start (see Refresh and gaps).
//   - crosscheck.go checks each checkpoint before it is used (see
//     Cross-checks) and reads _last_checkpoint, with its checksum.
//   - checkpoint.go and parquetcols.go read checkpoints: Parquet files
//     are read leaf column by leaf column with definition levels (not with
//     parquet-go's row reconstruction, which panics on arrow-rs MAP groups
//     and turns absent groups into zero structs); JSON V2 checkpoints with
//     commit.go; sidecars are followed from _delta_log/_sidecars.
//   - statsparsed.go gives an add that has only add.stats_parsed (a
//     checkpoint written with writeStatsAsJson off) the JSON statistics
//     string that struct stands for, rendered only where exact
//     (integers, decimals, finite floats, valid UTF-8 strings, booleans,
//     dates, timestamps at full precision; no binary, no nested columns),
//     so AddFile.Stats is the one representation every consumer reads
//     and costs what a JSON string costs. A checkpoint file whose
//     stats_parsed types disagree with its schema (by physical name)
//     gives its adds no statistics: no skipping, never wrong skipping.
//   - commit.go parses JSON commits line by line.
//   - replay.go applies actions: add and remove keyed by (path, deletion
//     vector unique id), in file order within a commit; in a log
//     compaction file the first action per key wins (they list actions
//     newest first).
//   - protocol.go decides whether a version can be read:
//     SupportedReaderFeatures is the one list of reader features.
//   - table.go ties it together with caches; snapshot.go is the result.
//   - dv.go and z85.go load deletion vectors; timetravel.go maps times to
//     versions; history.go lists versions for the filesystem and for
//     `deltafs log`.
//
// # Caching and sharing
//
// A Table keeps its listing, parsed commits and checkpoints, decoded
// deletion vectors and recently built snapshots (bounded by Options; the
// listing and the per-version commit times grow with the log). Building version N starts from the
// nearest cached snapshot at or after the checkpoint that N would use,
// else from that checkpoint, and applies only the commits after it.
// AddFile values are interned by (path, deletion vector id) and content,
// so versions that share a data file share its *AddFile. Concurrent
// requests for one version build it once (internal/flight); a request that
// gives up leaves at once, and the build goes on for the next one.
//
// # Errors
//
// Errors are *Error values that print as one line, "TABLE version N:
// FILE: cause" (the version or file is left out where there is none); a
// cause never repeats the version or the file. Causes wrap
// ErrNotDeltaTable, ErrVersionNotFound, ErrLogGap, ErrCorrupt or
// storage.ErrNotExist, or are an *UnsupportedFeatureError. The version
// named is the one asked for, the file the one at fault;
// Error.FileVersion says from which version on the versions fail alike.
// No input makes this package panic: Parquet and roaring panics are
// recovered into errors naming the file.
//
// # Sizes the log claims
//
// No allocation or loop is sized by a number from the log or a file
// before it is checked against what is there: commits and checkpoints
// are read at their listed sizes; a sidecar at its object's size (its
// action's sizeInBytes must match); a deletion vector's offset and size,
// past 1 MiB, against its file's size; a multi-part checkpoint's part
// count against the parts listed; a Parquet footer's every list, map and
// string length against the footer's bytes (and what it decodes to against
// a bound), its schema and row groups against each other and the file,
// before parquet-go decodes it, and each page's sizes, value count and
// compressed stream against its chunk and the file before parquet-go
// reads the page (package internal/pqcheck, shared with the data file
// readers), row counts against the file size; version
// numbers in file names index nothing. Sums of claimed row counts that
// overflow an int64 are an error, so Snapshot.NumRows is a true sum, and
// a deletion vector may not delete more rows than its file's statistics
// (JSON or stats_parsed) give it. _last_checkpoint is read only up to 16
// MiB.
//
// # Cross-checks
//
// A checkpoint is the reconciled state of its version, and is checked as
// such before it is used: two add actions of one key (path and deletion
// vector id) anywhere in it (parts and sidecars included), or more than
// one protocol or metaData action, make it inconsistent; so does a
// disagreement with _last_checkpoint when that hint is of the
// checkpoint's version: numOfAddFiles against its add actions, and,
// when the hint describes this very checkpoint (the same V2 file name,
// else the same number of parts), size against its actions (rows or
// lines of every file, sidecars included). A hint whose checksum does not
// match its content, or with duplicate keys, is ignored (as Delta does);
// one without a checksum is believed. _last_checkpoint is read at Open
// and again when a newer checkpoint is listed. An inconsistent checkpoint
// is marked untrusted for the Table's life: versions are built from an
// older checkpoint or from the commits when those exist, else fail
// naming the checkpoint and the disagreement. (A checkpoint that cannot
// be parsed is not passed over: it fails the versions that use it.)
//
// Not detectable this way: a part replaced by another valid part with
// the same counts and distinct keys (other files, same number), damage to
// add actions that keeps their keys (a changed size, partition value or
// statistics), a missing tombstone, and any damage when the hint is
// absent, of another version, or wrong in the same way as the
// checkpoint. sizeInBytes is not compared: writers disagree on what it
// counts (a V2 checkpoint's top-level file alone, or with its sidecars).
// Commits carry no counts to check against.
//
// # Refresh and gaps
//
// A commit can become visible after a newer one (eventually consistent
// listings, writers that copy commits into place). Listing again starts
// at the oldest missing commit that appeared while the table was open,
// not at the latest version, until it fills; versions from it on are
// listed by Versions but fail, naming the missing commit, until then,
// and the versions before it stay listed. A gap present when the table is
// opened counts as pending only when nothing after it can be read (no
// later checkpoint). A log file whose size or time changes between
// listings (a partial write completed) replaces the listed one, and what
// was read of it is dropped.
//
// # Versions and times
//
// The readable versions (Versions, History, VersionAt) run from Earliest —
// 0, or the oldest complete checkpoint after which no commit is missing —
// to the newest version reachable without a missing commit; Versions then
// lists the versions after a missing commit that have a file of their own
// (see Refresh and gaps). Snapshot also builds an older version when its
// own segment is intact (commits before a gap), and refuses, naming the
// missing file, one that needs a missing commit. A version's time is its
// inCommitTimestamp when the latest metadata enables in-commit timestamps
// from that version on, else its commit file's modification time,
// truncated to the millisecond (Delta's unit, and the precision deltafs
// prints), so that every printed time selects its own version. VersionAt
// returns the greatest version whose time is not after the time asked
// for, without assuming that times increase. ParseTime is the one parser
// of the times a user gives: Unix milliseconds, RFC 3339, or the table
// format of `deltafs log` (LogTimeLayout, UTC).
//
// # Damage
//
// A corrupt or missing log file fails only the versions that need it, and
// a later version's problem (damage, a gap, a protocol this reader
// refuses) never fails an older version that reads. Open fails for an I/O
// error, a log in which no version can be reconstructed, or a protocol
// refused from the earliest version on; a refused or damaged latest
// version leaves Open working and makes Snapshot of it fail. Versions
// lists damaged versions too (Snapshot says what is wrong); History stops
// at the first one, after reporting the versions before it.
//
// # What is left to others
//
// Partition values stay strings keyed by physical name (PartitionColumns
// maps logical to physical names); typed parsing belongs to the scan
// package. Where the log has no statistics, AddFile.NumRecords is -1 and
// the scan package reads the Parquet footer. A data file removed by VACUUM
// is still listed by the snapshot of a version that has it; reading it
// fails in the scan package.
package snapshot
