// Package pqcheck checks what a Parquet file claims before parquet-go
// reads it, for every Parquet file deltafs opens: checkpoints and sidecars
// of the log (package snapshot) and data files (packages scan and sample).
//
// parquet-go (v0.32) allocates what a file claims before reading it: every
// list of the footer at its claimed length (a footer of 20 bytes claiming
// a list of 2^30 structs makes the Go runtime die of "out of memory",
// which no recover catches), the page index at the lengths the footer
// gives, a page's buffer at its claimed compressed size, the decompressed
// buffer at its claimed uncompressed size, snappy and zstd at the lengths
// their streams claim, levels and values at a page's claimed value count.
// This package checks each of those numbers against the bytes that hold
// them and against the limits (limits.go), without allocating what they
// claim:
//
//   - Footer: the frame, the footer's Thrift (walkThrift: no list or
//     string longer than the bytes left, no nesting deeper than 64, no
//     more than MaxDecodeBytes once decoded), the schema tree, and every
//     row group's columns, rows and byte ranges.
//   - File.CheckPageIndex: each column and offset index region, and the
//     page locations of each offset index (inside their chunk).
//   - File.CheckPages: the page headers of whole pages of a chunk, each
//     page's sizes and value count, and its compressed bytes (checkBody).
//   - ReadTail reads a file's page index and footer with bounded reads and
//     checks them; Staged serves checked bytes to parquet-go from memory,
//     so that what it decodes is what was checked.
//
// Errors are single lines naming the claim ("column pixels: a page claims
// 2147483647 bytes, 812 are left in its chunk"); callers add the file.
package pqcheck
