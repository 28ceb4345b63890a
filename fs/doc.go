// Package fs is deltafs's go-fuse tree. It presents what package sample
// decides, and decides nothing itself: each node kind is one small struct
// embedding gofs.Inode, whose kernel-facing methods are a few lines that
// delegate to the sample layer and turn errors into errno in one function
// (toErrno).
//
// # The tree
//
//	MOUNT/
//	  latest -> version/N      symlink; moves, when the log is polled, to the
//	                           newest version that reads (Root.refresh)
//	  version/                 every readable version, oldest first
//	    N/
//	      _commit.json         commit info, live files and rows
//	      _schema.json         the schema at N, in Delta's format
//	      shard/
//	        K/                 K = 0 .. S-1
//	          _samples.tsv     path, bytes, class, id per sample
//	          _extents.tsv     with Options.Extents: each sample's disk-cache extent and CRC-32
//	          <id><ext>        the samples of shard K
//	          <class>/<id><ext>   instead, with a class column
//	  at/<time>                lookup-only link to ../version/N current at
//	                           <time> (snapshot.ParseTime: Unix ms, RFC 3339,
//	                           or a time as `deltafs log` prints it, UTC)
//	  .deltafs/stats           counters, JSON (a fresh rendering per stat)
//
// latest moves only to a version whose snapshot builds (protocol accepted,
// log intact): a newer version that does not is listed under version/
// (reading under it fails with EIO and a log line), logged once per
// version and cause with the table and the cause, and tried again at
// every poll; latest moves on once it (or a later version) reads. A
// failed poll keeps the last list and is logged once.
//
// Root, version/, at/ and .deltafs/ are persistent nodes built in
// Root.OnAdd; everything below is created by Lookup and forgotten when the
// kernel forgets it. Shard and class folders are listed through
// OpendirHandle with a handle that generates entries from the shard's index
// one at a time (no slice of 100k entries), with FOPEN_CACHE_DIR so a
// second listing costs no request; lookups go through the index's name map.
//
// # Caching knobs
//
// A version never changes, so everything under version/N has long kernel
// entry and attribute timeouts (Options.Immutable, default 24h). Only the
// root, version/, latest and at/ change: they use Options.Refresh (the log
// polling interval) as timeouts, and when latest moves Root.Run also sends
// NotifyEntry for "latest" and for the new version names.
//
// Files answer Open and Flush with ENOSYS. The kernel then stops sending
// OPEN, RELEASE and FLUSH for the whole mount and keeps file pages across
// opens, so a second epoch over a version is served by the page cache with
// zero FUSE requests per file (no LOOKUP, GETATTR, OPEN, READ, FLUSH,
// RELEASE or GETXATTR; only an OPENDIR and RELEASEDIR per directory listed,
// TestWarmPassNoRequests). One exception comes from callers: the kernel
// forwards every ioctl on a FUSE file, whatever the server answered before,
// so CPython's open(), which asks isatty (TCGETS) on every file, costs one
// IOCTL round trip per open. (Writes never get that far: the mount is "ro", and
// the kernel answers EROFS.) Extended attributes are disabled (no getxattr
// per stat) unless Options.Xattrs asks for the extent attribute, and
// go-fuse's readdirplus fills attributes while listing, so the per-file
// lookups of a first epoch are done by the listing.
//
// _extents.tsv is the exception to long-lived pages: reading it from
// offset 0 materialises the shard in the disk cache (Options.Extents
// decides how), so each read drops the file's cached pages afterwards and
// its attributes expire at once (see extentsFile).
//
// Read results come from memory, so splicing is off (DisableSplice: one
// writev per reply is cheaper than a pipe round trip for small samples).
// The kernel caches symlink targets (EnableSymlinkCaching); latest's is
// invalidated with NotifyContent when it moves, and at/ links never change.
//
// Every node answers STATFS as the root does, and FSYNC/FSYNCDIR with
// ENOSYS, which the kernel takes for success and then stops sending (see
// mountFS in mount.go; statfs.go for the figures: 4 KiB blocks of the latest
// version's data files, none free, NAME_MAX 255). Every directory, .deltafs/
// included, is mode 0555.
//
// The .deltafs/stats file is the one file whose content changes: it
// reports attribute timeout 0 and mtime = now, which makes the kernel drop
// its cached pages at every stat.
//
// # Inode numbers
//
// Inode numbers are deterministic and bit-packed (see ino.go):
// kind (7 bits) | version (24 bits) | item (32 bits), below 2^63, so the
// same path has the same number on every mount and no two files share one.
// Samples use their index in the version as the item. Values that do not
// fit get go-fuse's automatic numbers (unique, not stable).
//
// # Errors
//
// errnoFor maps: an interrupted request (its own context done) to EINTR,
// unknown names to ENOENT, the few errnos produced on purpose below fs (its
// deliberate list: ENODATA for a sample without an extent) to themselves,
// and everything else to EIO with a log line naming the operation and path
// (a vacuumed data file, a row of the wrong size, an unreadable page, a
// storage timeout after retries, an unreachable S3 endpoint) — whatever
// errno the error carries inside (ECONNREFUSED and friends never reach the
// kernel). A data file that cannot be read fails only its own samples.
package fs
