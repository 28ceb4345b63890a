package snapshot

import (
	"maps"
	"runtime"
	"sync"
	"weak"
)

// interner shares one *AddFile between every snapshot (and every parsed
// commit or checkpoint) that holds the same logical file with the same
// content, so that callers can memoise per-file work by pointer. It keeps
// weak pointers only: an entry lives as long as some snapshot, cached
// commit or caller holds the AddFile.
type interner struct {
	mu sync.Mutex
	m  map[fileID]weak.Pointer[AddFile] // guarded by mu
}

type internCleanup struct {
	in *interner
	id fileID
	wp weak.Pointer[AddFile]
}

// intern returns the shared AddFile equal to a (same key and content), or
// makes a the shared one.
func (in *interner) intern(a *AddFile) *AddFile {
	id := a.id()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m == nil {
		in.m = map[fileID]weak.Pointer[AddFile]{}
	}
	if wp, ok := in.m[id]; ok {
		if old := wp.Value(); old != nil && sameAdd(old, a) {
			return old
		}
	}
	wp := weak.Make(a)
	in.m[id] = wp
	runtime.AddCleanup(a, forgetInterned, internCleanup{in: in, id: id, wp: wp})
	return a
}

func forgetInterned(c internCleanup) {
	c.in.mu.Lock()
	if c.in.m[c.id] == c.wp {
		delete(c.in.m, c.id)
	}
	c.in.mu.Unlock()
}

// sameAdd reports whether the new add action b of a logical file can be
// served by the shared old one: same content, and old statistics at least
// as complete. dataChange is left out: checkpoints rewrite it.
func sameAdd(old, b *AddFile) bool {
	a := old
	return sameStats(a, b) && a.Path == b.Path && a.Size == b.Size && a.ModificationTime == b.ModificationTime &&
		a.NumRecords == b.NumRecords && a.DeletionVector.UniqueID() == b.DeletionVector.UniqueID() &&
		dvCard(a) == dvCard(b) && equalInt64Ptr(a.BaseRowID, b.BaseRowID) &&
		equalInt64Ptr(a.DefaultRowCommit, b.DefaultRowCommit) &&
		maps.EqualFunc(a.PartitionValues, b.PartitionValues, equalStringPtr) &&
		maps.Equal(a.Tags, b.Tags) && a.ClusteringProvider == b.ClusteringProvider
}

// sameStats: b's statistics add nothing to old's. Statistics rendered
// from a checkpoint's stats_parsed and the writer's JSON of the same file
// stand for each other.
func sameStats(old, b *AddFile) bool {
	if old.Stats == b.Stats || b.Stats == "" {
		return true
	}
	return old.Stats != "" && (old.statsRendered || b.statsRendered)
}

func dvCard(a *AddFile) int64 {
	if a.DeletionVector == nil {
		return -1
	}
	return a.DeletionVector.Cardinality
}

func equalInt64Ptr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
