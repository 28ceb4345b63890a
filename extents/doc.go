// Package extents is what deltafs says about where samples' bytes lie in its
// disk cache, so that a loader can read them without FUSE (with O_DIRECT,
// or GPUDirect Storage through package gds): the one definition that the
// producer (package cache/materialize, served by package fs) and the
// readers (package gds, examples/gds/loader.py) share.
//
// An Extent is a sample's bytes at an offset in a cache file, with their
// CRC-32: Length bytes at Offset (4 KiB-aligned, Alignment) in the file at
// Path, whose checksum is Sum. The disk cache keeps each sample as one entry
// of its own (cache.Cache.Materialize), so a sample is one extent.
//
// # Two ways out
//
// A deltafs mount with a disk cache publishes extents in two forms:
//
//   - the extended attribute XattrName ("user.deltafs.extent") of a sample
//     file, with mount option --xattrs; its value is Extent's text form,
//     PATH<TAB>OFFSET<TAB>LENGTH<TAB>CRC32;
//   - the extent list ListName ("_extents.tsv") in each shard directory,
//     one line per sample (WriteList, ParseList, ReadListFile).
//
// (The shard's other file, _samples.tsv, is its sample list: see package
// sample.) Reading a shard's extent list writes every sample of the shard
// not yet cached (it warms the shard); reading the attribute writes one.
// After an eviction, reading again writes the entry back at the same
// place. OpenShard and SampleExtent find the extents of a mounted shard or
// sample file through these.
//
// # Extent list format
//
// UTF-8 text, one record per line, fields separated by one tab:
//
//	sample	path	offset	length	crc32
//	7/000123.png	/root/.cache/deltafs/deltafs-cache-v1/3f/3f…9a.dfc	4096	2791	5e1a09c3
//
// The first line is that header, and is required: it names the format.
// (The format before checksums had no crc32 column; ParseList refuses it
// with ErrOldList, and a three-field attribute value likewise.) sample is
// the sample file's path relative to the shard directory, '/'-separated;
// path is the cache file (absolute; a relative path is relative to the
// list's directory); offset and length are decimal byte counts; crc32 is
// the CRC-32 of the sample's bytes in Checksum's fixed-width text form, 8
// lowercase hex digits, or "--------" for a sample deltafs could not cache
// (its cache file is then missing). In sample and path, backslash, tab,
// newline and carriage return are written \\, \t, \n and \r; any other
// backslash sequence is an error. Empty lines are ignored and "\r\n" line
// ends are accepted. Every extent is validated (a path, a non-negative
// offset and length whose sum does not overflow): a list that fails is
// refused with the line that does.
//
// # Checksums
//
// A reader that bypasses FUSE bypasses the disk cache's own checks (an
// xxhash64 of every entry, verified by every read through the mount), so
// every extent carries the CRC-32 (IEEE, what zlib.crc32 computes) of the
// sample's bytes (Checksum), computed by deltafs when it materialises the
// entry from an entry it has just verified whole (a broken entry is
// rewritten then, never advertised). Readers verify what they read
// (Extent.Verify): a mismatch is a *ChecksumError, which readers treat
// like a cache file that ends inside the extent, as a miss: read the list
// or attribute again (deltafs re-materialises the sample, rewriting the
// entry), read the sample again, and as a last resort read the sample file
// through the mount, verified too. Never the wrong bytes.
package extents
