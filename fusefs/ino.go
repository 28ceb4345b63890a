package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// Node ids are the inode numbers, and both are a pure function of what a
// node is, bit-packed, so the server keeps no object per node: every
// request decodes its node id (node), and the same path has the same
// number on every mount.
//
//	bit 63      0
//	bits 58-62  kind (below)
//	bits 32-57  table version (below 2^26)
//	bits 0-31   item: shard number, K<<16 | class folder, or the sample's
//	            number in its version (sample.Shard.Global)
//
// The root is FUSE's node 1. A version at or beyond 2^26 (67 million
// commits) has no number: its directory is not served (a log line says
// so). A shard has at most 2^16 class folders (sample refuses more), and
// a version at most 2^32 samples (sample.MaxSamples).
// nodeKind is what a node is: the kinds below, one per place in the tree.
type nodeKind uint8

const (
	kindRoot       nodeKind = iota // MOUNT (node 1)
	kindVersions                   // MOUNT/version
	kindLatest                     // MOUNT/latest
	kindAtDir                      // MOUNT/at
	kindMetaDir                    // MOUNT/.deltafs
	kindStats                      // MOUNT/.deltafs/stats
	kindVersion                    // version/N
	kindCommit                     // version/N/_commit.json
	kindSchema                     // version/N/_schema.json
	kindShards                     // version/N/shard
	kindShard                      // version/N/shard/K (item K)
	kindSampleList                 // version/N/shard/K/_samples.tsv (item K)
	kindClass                      // version/N/shard/K/C (item K<<16 | class)
	kindSample                     // a sample file (item: number in the version)
	kindAt                         // at/<time> -> ../version/N
	kindExtents                    // version/N/shard/K/_extents.tsv (item K)
	kindTar                        // version/N/shard/K.tar (item K)
	numKinds
)

const (
	maxVersion = 1 << 26
	maxItem    = 1 << 32
	maxClasses = 1 << 16
)

// node is a decoded node id.
type node struct {
	kind    nodeKind
	version int64
	item    int64
}

// ino packs a node id; ok is false when the values do not fit.
func ino(kind nodeKind, version, item int64) (uint64, bool) {
	if kind == kindRoot {
		return fuse.FUSE_ROOT_ID, true
	}
	if version < 0 || version >= maxVersion || item < 0 || item >= maxItem {
		return 0, false
	}
	return uint64(kind)<<58 | uint64(version)<<32 | uint64(item), true
}

// decode unpacks a node id; ok is false for ids no node has.
func decode(id uint64) (node, bool) {
	if id == fuse.FUSE_ROOT_ID {
		return node{kind: kindRoot}, true
	}
	n := node{kind: nodeKind(id >> 58 & 31), version: int64(id >> 32 & (maxVersion - 1)), item: int64(id & (maxItem - 1))}
	if id>>63 != 0 || n.kind == kindRoot || n.kind >= numKinds {
		return node{}, false
	}
	return n, true
}

// classItem is the item of class folder c of shard k.
func classItem(k, c int) int64 { return int64(k)<<16 | int64(c) }

// shardOfClass splits a class folder's item.
func shardOfClass(item int64) (k, c int) { return int(item >> 16), int(item & (maxClasses - 1)) }

// ino packs the node id of one of r's nodes: ino's, or under a Catalog
// the mount's id for it (Catalog.tableIno).
func (r *Root) ino(kind nodeKind, version, item int64) (uint64, bool) {
	if r.ids == nil {
		return ino(kind, version, item)
	}
	return r.ids.cat.tableIno(r.ids.table, kind, version, item)
}

// mustIno is r.ino for nodes whose values always fit.
func (r *Root) mustIno(kind nodeKind, version, item int64) uint64 {
	n, _ := r.ino(kind, version, item)
	return n
}

// decode unpacks one of r's node ids: decode's, or under a Catalog
// Catalog.tableNode's (ok false for another table's ids).
func (r *Root) decode(id uint64) (node, bool) {
	if r.ids == nil {
		return decode(id)
	}
	t, n, ok := r.ids.cat.tableNode(id)
	if !ok || t != r.ids.table {
		return node{}, false
	}
	return n, true
}
