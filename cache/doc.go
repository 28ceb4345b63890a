// Package cache is deltafs's two-tier byte cache: a memory tier in front of
// a persistent, crash-safe disk tier, both in front of a caller-supplied
// fetch function (typically a ranged read from S3). Training reads the same
// samples every epoch; the cache turns every epoch after the first into
// local reads, and survives the mount being restarted.
//
//	c, err := cache.New(cache.Options{MemBytes: 1 << 30, Dir: dir, DiskBytes: 50 << 30})
//	b, err := c.Get(ctx, cache.Key{Kind: "page", Table: uri, File: f, Version: etag, Column: col, Unit: "17"}, fetch)
//
// # Keys
//
// A Key names immutable bytes by content identity: table URI, data file,
// the file's size or ETag, column, unit (page index, row range) and a kind
// namespace ("page", "index", ...). The table version is deliberately not
// part of it: Delta versions that reference the same data file share its
// entries, so time travel and a new version appended to a table re-use what
// earlier versions cached. The key's canonical text (Key.String) is hashed
// with sha256; the hex digest names the disk entry and the raw digest keys
// the memory tier. The text itself is stored in every entry and compared on
// every read, so even a hash collision cannot return another key's bytes.
//
// # Tiers
//
// Get looks in memory, then on disk, then calls fetch, and stores what it
// fetched in both tiers before returning. Concurrent Gets of one missing key
// share one fetch (internal/flight); a fetch error reaches every waiter and
// nothing is cached; a waiter whose ctx ends leaves at once without failing
// the others, and the fetch is cancelled only when no waiter is left.
//
// The memory tier is a best-effort accelerator; correctness never depends
// on it. It is ristretto v2 with cost = payload bytes (IgnoreInternalCost),
// behind a small strict LRU ("front", MemBytes/8 by default) holding the
// most recently stored payloads. ristretto's Set is asynchronous and is
// dropped under bursts or refused by TinyLFU admission, so a payload stored
// a moment ago — exactly what read-ahead (Prefetch, then Get) needs — is
// often absent: ristretto alone misses most reads right after a store, and
// many even once its set buffer is applied with the tier full.
// TestMemTierReadAfterSet measures it (784 B payloads; `go test -v -run
// MemTier`), asserting that with the front every such read hits; its
// figures are in bench/RESULTS.md ("Go benchmarks").
//
// The front trades a few points of hit ratio on a scan larger than memory
// (where the disk tier serves the misses) for a guaranteed hit on what was
// just fetched or prefetched; it also makes a memory hit slightly cheaper
// (one mutex per lookup; BenchmarkGetMemoryHit and its Parallel twin).
// Payloads larger than a part are simply not kept by it.
//
// The disk tier keeps one file per entry under Options.Dir, bounded by a
// byte budget (Options.DiskBytes) and a free-space floor (keep
// MinFreeFraction, 5%, of the filesystem free, checked with statfs before
// every write). Eviction is least recently used by bytes. Writes are
// synchronous in the fetching goroutine (write, fsync unless SkipFsync,
// rename): when Get returns, the entry is in place (and durable with fsync).
// Prefetch hides that cost for read-ahead. deltafs mounts skip the fsync
// unless --cache-fsync: every read verifies checksums, so what fsync buys is
// only that a just-written entry survives a power loss.
//
// What each path costs, and why (BenchmarkGet*, BenchmarkOpen; their
// figures are in bench/RESULTS.md, "Go benchmarks"):
//
//	memory hit           a lookup, the same for any size: no copy
//	disk hit             open, fstat, one pread (two for entry files past
//	                     smallEntry), xxhash, close: system calls dominate
//	                     small payloads
//	miss, local cost     creating the file, then the fsync unless SkipFsync
//	open, per entry      readdir + lstat: linear in the number of entries
//
// # On-disk layout
//
//	<Dir>/                         Options.Dir; default DefaultDir() = os.UserCacheDir()/deltafs
//	  deltafs-cache-v1/            everything the cache owns lives here
//	    meta.json                  budget of the last process to open it (informational)
//	    tmp.<pid>.<16 hex>         meta.json being replaced
//	    00/ … ff/                  256 shards by the first byte of the key hash
//	      <64 hex>.dfc             one entry: sha256 of the key text
//	      tmp.<pid>.<16 hex>       an entry being written by process pid
//
// An entry file is a header padded to a multiple of 4096 bytes (magic, format
// version, header length, payload length, xxhash64 of the payload, key text,
// xxhash64 of the header), then the payload, contiguous, then zeros to a
// multiple of 4096; see entry.go for the byte layout. The payload therefore
// starts 4 KiB-aligned and its last block lies inside the file, which lets
// Locate and Materialize hand an extent to O_DIRECT and GPUDirect Storage
// readers (Materialize, for package cache/materialize, writes the entry
// when missing, verifies it whole every time and returns an extents.Extent
// with the payload's CRC-32, which readers without xxhash can check). An
// entry costs its file size (header + payload rounded up to 4 KiB), which is
// also what it occupies on a 4 KiB-block filesystem.
//
// The cache deletes only files whose names match these patterns inside
// deltafs-cache-v1 and its two-hex-digit shards. Anything else found there
// (or in Dir) is never touched; Clear leaves it and the directories holding
// it in place.
//
// # Crash safety
//
// An entry appears only by rename(2) of a fully written (and, unless
// SkipFsync, fsynced) temp file in the same shard, so a process crash leaves
// at worst a temp file, never a partial entry under a final name; after a
// power loss without fsync a final name may hold lost data, which the
// checksums below catch. Every read verifies the header checksum,
// the key text, the exact file size and the payload checksum; an entry that
// fails (bit rot, a truncation by hand, a filesystem that lost data without
// fsync) is logged with its path, deleted and fetched again. Opening scans
// the shards: entry files whose size is not a positive multiple of 4 KiB are
// dropped at once; temp files are removed when their writer's pid is gone
// (kill(pid, 0)) or when they are older than StaleTempAge (pid reuse, other
// pid namespaces). A live writer whose temp file is removed anyway only sees
// its rename fail: it logs, and the caller still gets its bytes. The
// directory is not fsynced after the rename: a crash may lose a just-written
// entry, which is only a miss.
//
// # Several processes
//
// Any number of processes (and Cache instances) may share a directory. They
// never corrupt it: entries are immutable once renamed into place, a
// concurrent writer of the same key renames an identical entry over it, and
// an eviction that removes a file another process is reading leaves that
// reader's open descriptor valid. A Get always tries the entry's file even
// if its index has not seen it, so entries written by others are found.
//
// The budget is enforced approximately across processes: each process
// indexes what it saw when it opened plus what it wrote or read since, and
// evicts by that accounting. When it has to evict it also re-scans the
// directory (at most once per RescanInterval, in the background) to take in
// other processes' entries and forget the ones they evicted, and evicts down
// to the budget again. The directory can therefore exceed the budget by
// roughly what other processes wrote since the last rescan.
//
// Recency survives restarts through file modification times: an access sets
// the entry's mtime and atime to now, at most once per TouchInterval per
// entry, which bounds metadata writes for hot entries; the scan at open
// orders the LRU by mtime. Opening costs one readdir per shard and one
// lstat per entry (see BenchmarkOpen); entries' contents are only read when
// used.
//
// # Locking
//
// Each lock protects the fields declared beside it and is a leaf: no lock is
// held while taking another, and none is held across file I/O, logging or a
// fetch.
//
//   - diskTier.mu: the disk index (entries, LRU heap, byte totals).
//   - frontLRU.mu: the front LRU (internal/lru).
//   - the flight group's lock (internal/flight): the fills in progress and
//     their waiter counts.
//   - counters are atomics; ristretto does its own locking.
//
// # Errors and logs
//
// A key's text is internal: no error New, Get or Materialize returns
// carries it, nor any log line above debug. A fetch error is returned as
// the fetch function's own (it names what was read); a panicking fetch is
// one error line, with the stack in the log. A directory that cannot be
// created, or does not take writes (a read-only filesystem, no permission;
// New writes meta.json to find out), fails New with a *DirError naming it:
// a disk tier that silently stores nothing is not an option.
//
// # Returned bytes
//
// Slices returned by Get and Peek are shared by the cache and every caller
// that asked for the same key; they are never recycled, so callers may keep
// them indefinitely, but must not modify them.
package cache
