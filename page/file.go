package page

import "strconv"

// FileRef names one data file as the page reader reads it.
type FileRef struct {
	Path string // as written in the log (the cache and memo identity)
	Key  string // storage key
	Size int64  // bytes, from the log
	// ID is the object's identity in its store, from Fetcher.Identify:
	// the ETag where the store has one, else size and modification time.
	// It is part of every cache key of the file, so that a file replaced
	// by another of the same name and size is never served from entries
	// of the old one. "" until identified.
	ID string
	// ReadAheadEnd bounds the fetcher's read-ahead for this reader: no
	// page whose first row is at or past this physical row is read ahead
	// (0: the file's end). A shard's segment sets it to its last row + 1,
	// so that read-ahead never fetches the pages of rows other shards
	// (other ranks, other nodes) own; a probe of one row sets it to that
	// row + 1 (no read-ahead). Not part of the file's identity.
	ReadAheadEnd int64
}

// Identity is what cache keys call the file's version: its ID, or its
// size before it was identified.
func (r FileRef) Identity() string {
	if r.ID != "" {
		return r.ID
	}
	return strconv.FormatInt(r.Size, 10)
}

// CacheKey is the key of unit unit of column of the file, of kind kind:
// every key of a data file's units is made here, so that each carries the
// file's path and identity.
func (r FileRef) CacheKey(kind, column, unit string) Key {
	return Key{Kind: kind, File: r.Path, Version: r.Identity(), Column: column, Unit: unit}
}
