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
//   - segment.go chooses what to read for a version and validates it: the
//     newest complete checkpoint at or before it (a multi-part checkpoint
//     with a missing part is ignored), then the commits after it, which
//     must run without a gap. It also finds the earliest readable version
//     of a log whose old commits were cleaned up.
//   - checkpoint.go and parquetcols.go read checkpoints: Parquet files
//     are read leaf column by leaf column with definition levels (not with
//     parquet-go's row reconstruction, which panics on arrow-rs MAP groups
//     and turns absent groups into zero structs); JSON V2 checkpoints with
//     commit.go; sidecars are followed from _delta_log/_sidecars.
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
// requests for one version build it once (singleflight).
//
// # Errors
//
// Errors are *Error values that print as "TABLE version N: FILE: cause"
// (the version or file is left out where there is none). Causes wrap
// ErrNotDeltaTable, ErrVersionNotFound, ErrLogGap, ErrCorrupt or
// storage.ErrNotExist, or are an *UnsupportedFeatureError. No input makes
// this package panic: Parquet and roaring panics are recovered into
// errors naming the file.
//
// # Versions and times
//
// The readable versions (Versions, History, VersionAt) run from Earliest —
// 0, or the oldest complete checkpoint after which no commit is missing —
// to the latest listed version. Snapshot also builds an older version when
// its own segment is intact (commits before a gap), and refuses, naming
// the missing file, one that needs a missing commit. A version's time is
// its inCommitTimestamp when the latest metadata enables in-commit
// timestamps from that version on, else its commit file's modification
// time; VersionAt returns the greatest version whose time is not after
// the time asked for, without assuming that times increase.
//
// # Damage
//
// A corrupt or missing log file fails only the versions that need it.
// Open fails for a refused protocol of the latest version, an I/O error,
// or a log in which no version can be reconstructed; a damaged latest
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
