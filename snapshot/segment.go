package snapshot

import (
	"cmp"
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
// modified once published: extend returns a new listing.
//
// Commits are kept sorted by version, not indexed by it, so that a stray
// file name with a huge version number costs one entry, not a slice (or a
// loop) as long as the number.
type logListing struct {
	from        int64
	commits     []logFile           // kindCommit files, sorted by version, one per version
	checkpoints map[int64][]logFile // by version, every checkpoint file of it
	compactions []logFile           // sorted by (Version, End)
	latest      int64               // newest version with a commit or checkpoint; -1 if none
	// pending is the oldest version whose commit is missing but may yet
	// appear (a writer's commit not visible yet while newer ones are), -1
	// for none. Listing again starts there, not at latest, so the gap is
	// seen to fill; versions from it on are not taken as final (head stops
	// before it). A gap present when the log is first listed counts as
	// pending only when nothing after it can be read (no later
	// checkpoint); one that appears while polling always does, until it
	// fills.
	pending int64
	// head is the newest version before pending whose segment has every
	// file it needs by name: the newest complete checkpoint (or version -1
	// for a log listed from 0) followed by commits without a gap. -1 when
	// there is none.
	head int64
}

func newListing(from int64, files []logFile) *logListing {
	l := &logListing{from: from, checkpoints: map[int64][]logFile{}, latest: -1, pending: -1}
	l.add(files)
	l.head = l.computeHead()
	if l.head < l.latest {
		l.pending = l.head + 1
		l.head = l.computeHead()
	}
	return l
}

// add records files (all of version >= l.from), keeping the newest entry
// of a file listed twice. Only for listings not yet published. It returns
// the files that replace an entry with another size or time (a file that
// changed: a partial write completed).
func (l *logListing) add(files []logFile) (changed []logFile) {
	var commits []logFile
	for _, f := range files {
		switch f.Kind {
		case kindCommit:
			commits = append(commits, f)
		case kindCheckpoint, kindMultiCheckpoint, kindUUIDCheckpoint:
			cur := l.checkpoints[f.Version]
			if i := slices.IndexFunc(cur, func(g logFile) bool { return g.Key == f.Key }); i >= 0 {
				if cur[i].Size != f.Size || !cur[i].ModTime.Equal(f.ModTime) {
					cur = slices.Clone(cur)
					cur[i] = f
					l.checkpoints[f.Version] = cur
					changed = append(changed, f)
				}
				continue
			}
			l.checkpoints[f.Version] = append(slices.Clip(cur), f)
		case kindCompaction:
			if !slices.ContainsFunc(l.compactions, func(g logFile) bool { return g.Key == f.Key }) {
				l.compactions = append(l.compactions, f)
			}
		default:
			continue
		}
		l.latest = max(l.latest, f.Version)
	}
	changed = append(changed, l.addCommits(commits)...)
	slices.SortFunc(l.compactions, func(a, b logFile) int {
		if a.Version != b.Version {
			return cmp.Compare(a.Version, b.Version)
		}
		return cmp.Compare(a.End, b.End)
	})
	return changed
}

// addCommits merges commit files into l.commits. The common case, commits
// newer than every known one, appends; a commit that fills a gap, or
// replaces a changed file, copies the slice first (it may be shared with
// a published listing).
func (l *logListing) addCommits(files []logFile) (changed []logFile) {
	slices.SortFunc(files, func(a, b logFile) int { return cmp.Compare(a.Version, b.Version) })
	copied := false
	for _, f := range files {
		n := len(l.commits)
		if n == 0 || f.Version > l.commits[n-1].Version {
			l.commits = append(l.commits, f)
			continue
		}
		i, found := slices.BinarySearchFunc(l.commits, f.Version, func(c logFile, v int64) int { return cmp.Compare(c.Version, v) })
		if found && l.commits[i].Size == f.Size && l.commits[i].ModTime.Equal(f.ModTime) {
			continue
		}
		if !copied {
			l.commits, copied = slices.Clone(l.commits), true
		}
		if found {
			l.commits[i] = f
			changed = append(changed, f)
		} else {
			l.commits = slices.Insert(l.commits, i, f)
		}
	}
	return changed
}

// computeHead finds head (see logListing) for the current pending.
func (l *logListing) computeHead() int64 {
	base := int64(-1)
	for cv, files := range l.checkpoints {
		if cv > base && (l.pending < 0 || cv < l.pending) {
			if _, ok := completeCheckpoint(files, nil); ok {
				base = cv
			}
		}
	}
	if base < 0 && l.from > 0 {
		return -1 // the commits before from are not listed
	}
	i, _ := l.commitIndex(base + 1)
	v := base
	for ; i < len(l.commits) && l.commits[i].Version == v+1; i++ {
		v++
	}
	return v
}

// firstMissing is the first version >= from, up to latest, that has
// neither a commit nor a complete checkpoint; -1 when there is none. It
// steps over listed files only, so a stray file name with a huge version
// costs nothing.
func (l *logListing) firstMissing(from int64) int64 {
	u := from
	i, _ := l.commitIndex(u)
	for u <= l.latest {
		if i < len(l.commits) && l.commits[i].Version == u {
			i++
			u++
			continue
		}
		if _, ok := completeCheckpoint(l.checkpoints[u], nil); ok {
			u++
			continue
		}
		return u
	}
	return -1
}

// commitIndex is the index of the first commit of version >= v, and
// whether it is v.
func (l *logListing) commitIndex(v int64) (int, bool) {
	return slices.BinarySearchFunc(l.commits, v, func(c logFile, v int64) int { return cmp.Compare(c.Version, v) })
}

// extend returns a listing with files (a listing from version relistFrom
// or later) added, and the files that changed since l listed them. l
// itself is not modified.
func (l *logListing) extend(files []logFile) (*logListing, []logFile) {
	n := &logListing{
		from:        l.from,
		commits:     slices.Clip(l.commits),
		checkpoints: maps.Clone(l.checkpoints),
		compactions: slices.Clone(l.compactions),
		latest:      l.latest,
	}
	changed := n.add(files)
	// A gap among the versions new to this listing is pending until it
	// fills; so is one that already was.
	start := l.pending
	if start < 0 {
		start = l.latest + 1
	}
	n.pending = n.firstMissing(start)
	n.head = n.computeHead()
	return n, changed
}

// relistFrom is where listing the log again starts: the pending gap, else
// the latest version (whose checkpoint may be new).
func (l *logListing) relistFrom() int64 {
	from := l.latest
	if l.pending >= 0 && l.pending < from {
		from = l.pending
	}
	return max(from, l.from)
}

// commit returns the commit file of version v.
func (l *logListing) commit(v int64) (logFile, bool) {
	if len(l.commits) == 0 {
		return logFile{}, false
	}
	// Fast path: no gap before v.
	if i := v - l.commits[0].Version; i >= 0 && i < int64(len(l.commits)) && l.commits[i].Version == v {
		return l.commits[i], true
	}
	i, found := l.commitIndex(v)
	if !found {
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
// deterministic. A checkpoint for which skip is true (one found
// inconsistent) is passed over; skip may be nil.
func completeCheckpoint(files []logFile, skip func(key string) bool) (checkpointRef, bool) {
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
	ok := func(key string) bool { return skip == nil || !skip(key) }
	byKey := func(a, b logFile) int { return cmp.Compare(a.Key, b.Key) }
	slices.SortFunc(uuid, byKey)
	for _, f := range uuid {
		if ok(f.Key) {
			return checkpointRef{Version: f.Version, Kind: kindUUIDCheckpoint, Files: []logFile{f}}, true
		}
	}
	slices.SortFunc(classic, byKey)
	for _, f := range classic {
		if ok(f.Key) {
			return checkpointRef{Version: f.Version, Kind: kindCheckpoint, Files: []logFile{f}}, true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(parts)) {
		// A set is complete only with n distinct parts listed: the part
		// count of a file name (up to 10 digits) sizes nothing before
		// that is known.
		if n > len(parts[n]) {
			continue
		}
		got := make([]logFile, n)
		have := 0
		for _, f := range parts[n] {
			if got[f.Part-1].Kind == kindUnknown {
				got[f.Part-1] = f
				have++
			}
		}
		if have == n && ok(got[0].Key) {
			return checkpointRef{Version: got[0].Version, Kind: kindMultiCheckpoint, Files: got}, true
		}
	}
	return checkpointRef{}, false
}

// checkpointAtOrBefore returns the newest complete checkpoint of version
// <= v in the listing that skip does not refuse (skip may be nil).
func (l *logListing) checkpointAtOrBefore(v int64, skip func(string) bool) (checkpointRef, bool) {
	var best checkpointRef
	found := false
	for cv, files := range l.checkpoints {
		if cv > v || (found && cv <= best.Version) {
			continue
		}
		if c, ok := completeCheckpoint(files, skip); ok {
			best, found = c, true
		}
	}
	return best, found
}

// incompleteCheckpoint returns a file of a checkpoint version <= v that
// has files but no complete checkpoint (for messages).
func (l *logListing) incompleteCheckpoint(v int64) (logFile, bool) {
	for cv, files := range l.checkpoints {
		if cv > v {
			continue
		}
		if _, ok := completeCheckpoint(files, nil); !ok {
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

// segmentFor selects the segment of version v, or fails with a cause
// wrapping ErrVersionNotFound or ErrLogGap (and the key of the file at
// fault). Checkpoints that skip refuses are passed over (skip may be nil).
// needFull reports that the answer might differ with a listing from
// version 0 (the listing starts later and holds no usable checkpoint at or
// before v). Causes do not repeat the version: the *Error around them
// names it.
func (l *logListing) segmentFor(v int64, skip func(string) bool) (seg *segment, file string, needFull bool, err error) {
	if l.latest < 0 {
		return nil, "", l.from > 0, ErrNotDeltaTable
	}
	if v > l.latest {
		return nil, "", false, because(ErrVersionNotFound, "does not exist (the latest version is %d)", l.latest)
	}
	if v < l.from {
		return nil, "", true, nil
	}
	seg = &segment{Version: v}
	if c, ok := l.checkpointAtOrBefore(v, skip); ok {
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
			if e := l.earliest(skip); e >= 0 && e > v {
				return nil, "", false, because(ErrVersionNotFound, "older than the earliest readable version %d (older log files were cleaned up)", e)
			}
			if f, ok := l.incompleteCheckpoint(v); ok {
				return nil, f.Key, false, because(ErrVersionNotFound, "cannot be reconstructed: this checkpoint is incomplete (a part is missing) and the commits before it are gone")
			}
			return nil, "", false, because(ErrVersionNotFound, "cannot be reconstructed: no usable checkpoint at or before it and no commit before version %d", u)
		}
		return nil, commitKey(u), false, because(ErrLogGap, "missing commit file: the log jumps from version %d to %d", u-1, l.nextCommit(u))
	}
	return seg, "", false, nil
}

// anyCommitBefore reports whether the listing has a commit older than u.
func (l *logListing) anyCommitBefore(u int64) bool {
	return len(l.commits) > 0 && l.commits[0].Version < u
}

// nextCommit is the first commit version > u, or l.latest.
func (l *logListing) nextCommit(u int64) int64 {
	if i, _ := l.commitIndex(u + 1); i < len(l.commits) {
		return l.commits[i].Version
	}
	return l.latest
}

// earliest is the earliest version from which every version up to head
// can be reconstructed with this listing: 0 when the commits run from 0
// without a gap, else the oldest complete checkpoint (that skip does not
// refuse) at or after the last gap. -1 when there is none.
func (l *logListing) earliest(skip func(string) bool) int64 {
	if l.head < 0 {
		return -1
	}
	// a: the start of the run of commits that ends at head.
	a := l.head + 1
	if i, found := l.commitIndex(l.head); found {
		for ; i >= 0 && l.commits[i].Version == a-1; i-- {
			a--
		}
	}
	if a == 0 {
		return 0
	}
	best := int64(-1)
	for cv, files := range l.checkpoints {
		if cv < a-1 || cv > l.head || (best >= 0 && cv >= best) {
			continue
		}
		if _, ok := completeCheckpoint(files, skip); ok {
			best = cv
		}
	}
	return best
}

// beyondHead lists the versions after head that have a commit or a
// complete checkpoint: versions that need a missing commit, listed so
// that reading them says what is wrong.
func (l *logListing) beyondHead() []int64 {
	var out []int64
	i, _ := l.commitIndex(l.head + 1)
	for ; i < len(l.commits); i++ {
		out = append(out, l.commits[i].Version)
	}
	for cv, files := range l.checkpoints {
		if cv > l.head && !slices.Contains(out, cv) {
			if _, ok := completeCheckpoint(files, nil); ok {
				out = append(out, cv)
			}
		}
	}
	slices.Sort(out)
	return out
}
