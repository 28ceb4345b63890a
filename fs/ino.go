package fs

// Inode numbers are bit-packed and deterministic, so the same path has the
// same number on every mount and no two files ever share one:
//
//	bit 63      0 (numbers stay below 2^63, where go-fuse's automatic
//	            numbers start)
//	bits 56-62  kind (below)
//	bits 32-55  table version (below 2^24)
//	bits 0-31   item: shard number, class folder, or the sample's index in
//	            its version
//
// Where a value does not fit (a version ≥ 2^24, more than 2^32 samples in a
// version, ≥ 2^16 shards or class folders per shard), the node gets Ino 0,
// which makes go-fuse assign a fresh unique number (≥ 2^63): still never
// shared, just not stable across mounts.
const (
	kindVersions = 1 + iota // MOUNT/version
	kindLatest              // MOUNT/latest
	kindAtDir               // MOUNT/at
	kindMetaDir             // MOUNT/.deltafs
	kindStats               // MOUNT/.deltafs/stats
	kindVersion             // version/N
	kindCommit              // version/N/_commit.json
	kindSchema              // version/N/_schema.json
	kindShards              // version/N/shard
	kindShard               // version/N/shard/K (item K)
	kindManifest            // version/N/shard/K/_samples.tsv (item K)
	kindClass               // version/N/shard/K/C (item K<<16 | class)
	kindSample              // a sample file (item: index in the version)
	kindAt                  // at/<time> -> ../version/N
	kindExtents             // version/N/shard/K/_extents.tsv (item K)
)

const (
	maxVersion = 1 << 24
	maxItem    = 1 << 32
)

// ino packs an inode number, or returns 0 (automatic) when it cannot.
func ino(kind int, version int64, item int64) uint64 {
	if version < 0 || version >= maxVersion || item < 0 || item >= maxItem {
		return 0
	}
	return uint64(kind)<<56 | uint64(version)<<32 | uint64(item)
}

// classIno is the number of class folder c of shard k.
func classIno(version int64, k, c int) uint64 {
	if k >= 1<<16 || c >= 1<<16 {
		return 0
	}
	return ino(kindClass, version, int64(k)<<16|int64(c))
}
