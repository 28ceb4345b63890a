// Package testkit holds the helpers that deltafs's tests in several
// packages share, so that each is written once:
//
//   - tables.go: ModuleRoot; the repository's test tables
//     (testdata/delta) and CopyTable, which copies one into t.TempDir()
//     before a test damages or changes it; Expected, which decodes
//     testdata/delta/EXPECTED.json (what each table holds); DirNames.
//   - damage.go: FlipByte, bit rot in place.
//   - syncbuffer.go: SyncBuffer, a buffer that a child process or a
//     logger writes while the test reads it.
//   - special.go: Bounded, which fails a test whose call blocks (on a
//     named pipe, say), and Socket, a Unix socket to put into a table.
//   - mnist.go: the real MNIST digits of testdata/mnist, read from their
//     gzipped .npy files as testdata/mnist/README.md describes,
//     independently of the importer, and digits written back in that
//     layout (a source for `deltafs import`).
//   - npy.go: the header of a NumPy .npy file, for tests that write
//     sources for the importer.
//   - parquet.go: every row of a Parquet file as column name -> Go value,
//     read with parquet-go's generic row API, independently of deltafs's
//     scanner.
//   - blobtable.go: WriteBlobTable, a one-file table of (id, data) rows
//     with values of any size, and DeepSchema, a schema nested as deeply
//     as asked (hostile presentation).
//   - process.go: a command's test binary run again as the command itself
//     (MainProcess in TestMain, RunMain in a test), so that a test sees a
//     real run's exit status, stdout and stderr without building a binary.
//
// testkit imports no deltafs package, so that the tests of any package
// (in-package tests included) can use it without an import cycle. The
// other test helpers live beside it: mounttest (the deltafs binary and
// FUSE mounts), s3test (S3 servers), pqtest (Parquet files with hostile
// claims) and attack (damaged tables for the attack suite).
package testkit
