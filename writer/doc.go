// Package writer writes versions of a Delta Lake table: Parquet data files
// first, then one atomic commit that names them.
//
// # What a write does
//
// Write reads the table's latest version (or finds none), streams the rows
// into data files at the table root named part-NNNNN-<uuid>-c000.snappy.parquet
// (RowsPerFile rows each, fewer when MaxFileBytes is reached first), and then
// commits _delta_log/<version>.json holding a commitInfo, for a new table a
// protocol (reader 1, writer 2) and a metaData action, for an overwrite one
// remove per live file of the version read, and one add per new data file.
// Every add carries size, modificationTime, dataChange and stats
// (numRecords, and nullCount, minValues and maxValues for primitive columns;
// no min/max for binary and boolean columns, strings cut to 32 characters
// with no max when cut, timestamps as milliseconds).
//
// All I/O goes through storage.Storage, so a write works on every backend.
//
// # Commits
//
// A commit is put-if-absent (storage.Put with ifAbsent). The table is read
// through package snapshot (so checkpoints and every log it reads are fine
// here too). When another writer took the version first, Write refreshes the
// listing of the log, reads the new latest version and tries the next one:
//
//   - an append is always safe to retry;
//   - an overwrite recomputes its removes from the files now live;
//   - when the table was created concurrently, the commit drops its protocol
//     and metaData and requires the winner's schema to equal its own;
//   - with Options.IDColumn, ids are assigned from max(id)+1 of the version
//     read; if the missed commits raised max(id) to or past the first id
//     written, the data files are rewritten with the ids shifted (read back
//     through storage, only the id column changes), so ids stay unique.
//
// Data files of a commit that never lands are left behind as orphans; Delta
// readers ignore files the log does not name, and VACUUM removes them. A
// write that fails or is interrupted (its context done: every row, data
// file and commit attempt checks it) after storing data files returns an
// *AbortError listing them. When the commit's own put fails, the write
// reads the commit back (briefly, even with its context done) before
// answering: a put that landed is a success; one that did not leaves
// nothing committed; one the store cannot confirm either way is reported
// as AbortError.MaybeCommitted.
//
// # Data files
//
// One row group per file, snappy, data page v2, with the column and offset
// indexes (the read path finds a row's page through the offset index). Pages
// are cut at about 64 KiB of uncompressed values (parquet-go's page buffer),
// so reading one sample decompresses one small page: 64 KiB holds about 80
// MNIST-sized (784-byte) samples, and a value larger than that is a page of
// its own. Binary columns carry no min/max statistics, in pages or footer,
// since bounds of blobs are meaningless and large. Delta types map to
// Parquet as PROTOCOL.md's table says: byte and short are INT32 with an
// INT(8|16) annotation, date is INT32 DATE, timestamp is INT64
// TIMESTAMP(micros, UTC), string is BYTE_ARRAY STRING. Nullable fields are
// OPTIONAL columns, others REQUIRED.
//
// # Tables it writes to
//
// Unpartitioned tables with protocol reader version 1 and writer version 2
// at most, with no column invariants, and a schema of the primitive types
// listed on Row. An overwrite of a table with delta.appendOnly=true is
// refused. A location that holds objects but no Delta log is refused unless
// those objects are only leftovers of an earlier failed or concurrent write
// (data files named like this package's, the local backend's in-flight
// copies of them, or an empty log).
package writer
