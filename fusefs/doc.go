// Package fusefs is deltafs's filesystem, a go-fuse raw filesystem
// (fuse.RawFileSystem). It presents what package sample decides, and
// decides nothing itself: every request names a node by its id, which
// says what the node is (ino.go); the answer comes from the version list
// or the sample layer's index; errors become errno in one function
// (errnoFor).
//
// # The tree
//
//	MOUNT/
//	  latest -> version/N      symlink; moves, when the log is polled, to the
//	                           newest version that reads (refresh.go)
//	  version/                 every readable version, oldest first
//	    N/
//	      _commit.json         commit info, live files and rows
//	      _schema.json         the schema at N, in Delta's format
//	      shard/
//	        K/                 K = 0 .. S-1
//	          _samples.tsv     path, bytes, class, id per sample (generated
//	                           for the range read, never held whole)
//	          _extents.tsv     with Options.Extents: each sample's disk-cache extent and CRC-32
//	          <id><ext>        the samples of shard K
//	          <class>/<id><ext>   instead, with a class column
//	  at/<time>                lookup-only link to ../version/N current at
//	                           <time> (snapshot.ParseTime: Unix ms, RFC 3339,
//	                           or a time as `deltafs log` prints it, UTC)
//	  .deltafs/stats           counters, JSON (a fresh rendering per stat)
//
// # Many tables
//
// A Catalog (catalog.go) mounts many tables found by name: directories
// listed from a catalog (a Unity Catalog schema's tables, a catalog's
// schemas, a Delta Sharing profile's shares and their schemas) above one
// Root per table, each the tree above. A table is opened at the first
// request inside its directory, the listings are read again every
// refresh, and a table that cannot be opened answers EIO while the others
// serve. Which locations are catalogs, and how they list, is package
// table's (table.OpenCatalog); fs only shows what the listings say.
//
// latest moves only to a version whose snapshot builds (protocol accepted,
// log intact): a newer version that does not is listed under version/
// (reading under it fails with EIO and a log line), logged once per
// version and cause with the table and the cause, and tried again at
// every poll; latest moves on once it (or a later version) reads. A
// failed poll keeps the last list and is logged once.
//
// # No object per file
//
// A node id is its inode number, bit-packed from its kind, version and
// item (shard, class folder, or the sample's number in its version), so
// the server keeps nothing per node: LOOKUP, GETATTR, READ and READDIR
// decode the id and ask the sample layer, which keeps each version's
// index (a few tens of bytes a sample) and drops versions nobody uses.
// FORGET only updates a count. The same path has the same number on every
// mount, before and after the kernel forgets it.
//
// Listings are generated from the index from the offset the kernel asks
// (dir.go): nothing per open directory. READDIRPLUS gives entries their
// attributes — the kernel then makes an inode for each (about 1.1 KiB of
// kernel memory) and a first read needs no LOOKUP — only while the
// kernel holds fewer than Options.KernelInodes of the mount's inodes (100,000
// by default: every shard up to that size is listed as before, and
// listing ten million samples costs the kernel about 110 MiB, not 12 GB);
// past it, entries go by name only, and a first open of such a file costs
// one LOOKUP. Measured on 1,000,000 entries: `ls -f` at about 1.1 million
// entries a second either way.
//
// # Caching knobs
//
// A version never changes, so everything under version/N has long kernel
// entry and attribute timeouts (Options.Immutable, default 24h), negative
// entries too, and its directories are opened with FOPEN_CACHE_DIR, so a
// second listing costs no request. Only the root, version/, latest and
// at/ change: they use Options.Refresh (the log polling interval) as
// timeouts, and when latest moves or versions appear the poll notifies
// the kernel (InodeNotify for latest's target, EntryNotify for the names).
//
// Files answer Open and Flush with ENOSYS. The kernel then stops sending
// OPEN, RELEASE and FLUSH for the whole mount and keeps file pages across
// opens, so a second epoch over a version is served by the page cache with
// zero FUSE requests per file (no LOOKUP, GETATTR, OPEN, READ, FLUSH,
// RELEASE or GETXATTR; only an OPENDIR and RELEASEDIR per directory listed,
// TestWarmPassNoRequests). One exception comes from callers: the kernel
// forwards every ioctl on a FUSE file, whatever the server answered before,
// so CPython's open(), which asks isatty (TCGETS) on every file, costs one
// IOCTL round trip per open; Ioctl answers ENOTTY at once. Fsync answers
// ENOSYS (success, and the kernel stops asking); StatFs reports a full
// read-only filesystem (statfs.go). Extended attributes are disabled (no
// getxattr per stat) unless Options.Xattrs asks for the extent attribute.
//
// _extents.tsv is the exception to long-lived pages: reading it from
// offset 0 materialises the shard in the disk cache (Options.Extents
// decides how), so each read drops the file's cached pages afterwards and
// its attributes expire at once (see extentsFile).
//
// Read results come from memory, so splicing is off (DisableSplice: one
// writev per reply is cheaper than a pipe round trip for small samples).
// The kernel caches symlink targets (EnableSymlinkCaching); latest's is
// invalidated when it moves, and at/ links never change.
//
// The .deltafs/stats file is the one file whose content changes: it
// reports attribute timeout 1 ns and mtime = now, which makes the kernel
// drop its cached pages at every stat.
//
// # Errors
//
// errnoFor maps: an interrupted request (its own context done) to EINTR,
// unknown names to ENOENT (cached as negative entries), deliberate errnos
// through, and everything else to EIO with a log line naming the
// operation, the path and the cause (a vacuumed data file, a row of the
// wrong size, an unreadable page, a storage read that timed out or failed
// after its retries, an unreachable S3 endpoint). A shard whose data file
// cannot be indexed fails whole; a file that fails later fails its own
// samples.
package fusefs
