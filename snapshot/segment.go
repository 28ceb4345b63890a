package snapshot

import (
	"maps"
	"slices"
)

// A log segment is what reconstructing one version reads: at most one
// checkpoint, then the commits after it up to the version. segmentFor
// guarantees, or fails naming the file that breaks it:
//
//  1. the version is not newer than the latest listed version;
//  2. the checkpoint (if any) is the newest complete one at or before the
//     version: a multi-part checkpoint has all its parts (incomplete ones
//     are ignored, as the protocol requires);
//  3. the commits run without a gap from the one after the checkpoint (or
//     from version 0) to the version.

// logListing is the listed log, complete for versions >= from. It is never
// modified once published; extend returns a new listing that shares the
// old one's commit slice (append-only).
type logListing struct {
	from        int64
	commits     []logFile           // index v-from; Kind == kindUnknown where missing
	checkpoints map[int64][]logFile // by version, every checkpoint file of it
	compactions []logFile           // sorted by (Version, End)
	latest      int64               // newest version with a commit or checkpoint; -1 if none
}

func newListing(from int64, files []logFile) *logListing {
	l := &logListing{from: from, checkpoints: map[int64][]logFile{}, latest: -1}
	l.add(files)
	return l
}

// add records files (all of version >= l.from). Only for listings not yet
// published.
func (l *logListing) add(files []logFile) {
	for _, f := range files {
		switch f.Kind {
		case kindCommit:
			i := f.Version - l.from
			for int64(len(l.commits)) <= i {
				l.commits = append(l.commits, logFile{})
			}
			l.commits[i] = f
		case kindCheckpoint, kindMultiCheckpoint, kindUUIDCheckpoint:
			if !slices.ContainsFunc(l.checkpoints[f.Version], func(g logFile) bool { return g.Key == f.Key }) {
				l.checkpoints[f.Version] = append(slices.Clip(l.checkpoints[f.Version]), f)
			}
		case kindCompaction:
			if !slices.ContainsFunc(l.compactions, func(g logFile) bool { return g.Key == f.Key }) {
				l.compactions = append(l.compactions, f)
			}
		default:
			continue
		}
		l.latest = max(l.latest, f.Version)
	}
	slices.SortFunc(l.compactions, func(a, b logFile) int {
		if a.Version != b.Version {
			return cmpInt(a.Version, b.Version)
		}
		return cmpInt(a.End, b.End)
	})
}

// extend returns a listing with files (of version >= l.latest, or anything
// newer than from) added. The result shares l's commits backing array for
// the versions l already had: l itself is not modified.
func (l *logListing) extend(files []logFile) *logListing {
	n := &logListing{
		from:        l.from,
		commits:     slices.Clip(l.commits),
		checkpoints: maps.Clone(l.checkpoints),
		compactions: slices.Clone(l.compactions),
		latest:      l.latest,
	}
	// Files of versions l already has (the relisted latest) replace
	// nothing: a commit file is immutable. Skip commits already present.
	fresh := files[:0:0]
	for _, f := range files {
		if f.Kind == kindCommit && f.Version-l.from < int64(len(l.commits)) && l.commits[f.Version-l.from].Kind == kindCommit {
			continue
		}
		fresh = append(fresh, f)
	}
	n.add(fresh)
	return n
}

// commit returns the commit file of version v.
func (l *logListing) commit(v int64) (logFile, bool) {
	i := v - l.from
	if i < 0 || i >= int64(len(l.commits)) || l.commits[i].Kind != kindCommit {
		return logFile{}, false
	}
	return l.commits[i], true
}

// checkpointRef is one complete checkpoint: its files (one, or every part
// of a multi-part checkpoint in part order).
type checkpointRef struct {
	Version int64
	Kind    fileKind
	Files   []logFile
}

// Key names the checkpoint in messages and caches: its (first) file.
func (c checkpointRef) Key() string { return c.Files[0].Key }

// completeCheckpoint returns the checkpoint to use among the files of one
// version, or false when none is complete. Preference, when writers raced:
// a V2 UUID-named checkpoint, then a classic one, then the complete
// multi-part set with the fewest parts; ties by key, so the choice is
// deterministic.
func completeCheckpoint(files []logFile) (checkpointRef, bool) {
	var uuid, classic []logFile
	parts := map[int][]logFile{} // by number of parts
	for _, f := range files {
		switch f.Kind {
		case kindUUIDCheckpoint:
			uuid = append(uuid, f)
		case kindCheckpoint:
			classic = append(classic, f)
		case kindMultiCheckpoint:
			parts[f.Parts] = append(parts[f.Parts], f)
		}
	}
	byKey := func(a, b logFile) int { return cmpString(a.Key, b.Key) }
	if len(uuid) > 0 {
		slices.SortFunc(uuid, byKey)
		return checkpointRef{Version: uuid[0].Version, Kind: kindUUIDCheckpoint, Files: uuid[:1]}, true
	}
	if len(classic) > 0 {
		return checkpointRef{Version: classic[0].Version, Kind: kindCheckpoint, Files: classic[:1]}, true
	}
	for _, n := range slices.Sorted(maps.Keys(parts)) {
		got := make([]logFile, n)
		have := 0
		for _, f := range parts[n] {
			if got[f.Part-1].Kind == kindUnknown {
				got[f.Part-1] = f
				have++
			}
		}
		if have == n {
			return checkpointRef{Version: got[0].Version, Kind: kindMultiCheckpoint, Files: got}, true
		}
	}
	return checkpointRef{}, false
}

// checkpointAtOrBefore returns the newest complete checkpoint of version
// <= v in the listing.
func (l *logListing) checkpointAtOrBefore(v int64) (checkpointRef, bool) {
	var best checkpointRef
	found := false
	for cv, files := range l.checkpoints {
		if cv > v || (found && cv <= best.Version) {
			continue
		}
		if c, ok := completeCheckpoint(files); ok {
			best, found = c, true
		}
	}
	return best, found
}

// incompleteCheckpoints lists the checkpoint versions <= v that have files
// but are not complete (for messages).
func (l *logListing) incompleteCheckpoint(v int64) (logFile, bool) {
	for cv, files := range l.checkpoints {
		if cv > v {
			continue
		}
		if _, ok := completeCheckpoint(files); !ok {
			return files[0], true
		}
	}
	return logFile{}, false
}

// segment is what to read to reconstruct Version.
type segment struct {
	Version    int64
	Checkpoint *checkpointRef // nil: replay from version 0
	Commits    []logFile      // the commits after the checkpoint, ascending
}

// Base is the version the commits apply to: the checkpoint's, or -1.
func (s *segment) Base() int64 {
	if s.Checkpoint == nil {
		return -1
	}
	return s.Checkpoint.Version
}

// segmentFor selects the segment of version v, or fails with an *Error
// cause wrapping ErrVersionNotFound or ErrLogGap. needFull reports that
// the answer might differ with a listing from version 0 (the listing
// starts later and holds no usable checkpoint at or before v).
func (l *logListing) segmentFor(v int64) (seg *segment, file string, needFull bool, err error) {
	if l.latest < 0 {
		return nil, "", l.from > 0, ErrNotDeltaTable
	}
	if v > l.latest {
		return nil, "", false, because(ErrVersionNotFound, "version %d does not exist (the latest version is %d)", v, l.latest)
	}
	if v < l.from {
		return nil, "", true, nil
	}
	seg = &segment{Version: v}
	if c, ok := l.checkpointAtOrBefore(v); ok {
		seg.Checkpoint = &c
	} else if l.from > 0 {
		return nil, "", true, nil
	}
	for u := seg.Base() + 1; u <= v; u++ {
		f, ok := l.commit(u)
		if ok {
			seg.Commits = append(seg.Commits, f)
			continue
		}
		// A missing commit: a gap, or the start of a cleaned-up log.
		if seg.Checkpoint == nil && !l.anyCommitBefore(u) {
			if e := l.earliest(); e >= 0 && e > v {
				return nil, "", false, because(ErrVersionNotFound, "version %d is older than the earliest readable version %d (older log files were cleaned up)", v, e)
			}
			if f, ok := l.incompleteCheckpoint(v); ok {
				return nil, f.Key, false, because(ErrVersionNotFound, "version %d cannot be reconstructed: this checkpoint is incomplete (a part is missing) and the commits before it are gone", v)
			}
			return nil, "", false, because(ErrVersionNotFound, "version %d cannot be reconstructed: no checkpoint at or before it and no commit before version %d", v, u)
		}
		return nil, commitKey(u), false, because(ErrLogGap, "missing commit file: the log jumps from version %d to %d", u-1, l.nextCommit(u))
	}
	return seg, "", false, nil
}

func (l *logListing) anyCommitBefore(u int64) bool {
	for w := l.from; w < u; w++ {
		if _, ok := l.commit(w); ok {
			return true
		}
	}
	return false
}

// nextCommit is the first commit version > u, or l.latest.
func (l *logListing) nextCommit(u int64) int64 {
	for w := u + 1; w <= l.latest; w++ {
		if _, ok := l.commit(w); ok {
			return w
		}
	}
	return l.latest
}

// earliest is the earliest version from which every version up to the
// latest can be reconstructed with this listing: 0 when the commits run
// from 0 without a gap, else the oldest complete checkpoint at or after
// the last gap. -1 when the latest version cannot be reconstructed.
func (l *logListing) earliest() int64 {
	if l.latest < 0 {
		return -1
	}
	// a: the start of the run of commits that ends at the latest version.
	a := l.latest + 1
	for a-1 >= l.from {
		if _, ok := l.commit(a - 1); !ok {
			break
		}
		a--
	}
	if a == 0 {
		return 0
	}
	best := int64(-1)
	for cv, files := range l.checkpoints {
		if cv < a-1 || (best >= 0 && cv >= best) {
			continue
		}
		if _, ok := completeCheckpoint(files); ok {
			best = cv
		}
	}
	return best
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
