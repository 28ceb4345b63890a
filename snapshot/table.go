package snapshot

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/internal/flight"
	"github.com/deltafs/deltafs/internal/lru"
	"github.com/deltafs/deltafs/storage"
)

// Options tune a Table. The zero value gives the defaults.
type Options struct {
	// UseLogCompaction makes replay read log compaction files
	// (x.y.compacted.json) in place of the commits they cover. Off by
	// default: commits are always there when compactions are, and
	// replaying them is the reference behaviour.
	UseLogCompaction bool
	// CachedSnapshots is how many built snapshots are kept (default 16).
	CachedSnapshots int
	// CachedCommitActions bounds the parsed commits kept, counted in
	// actions (default 1<<20).
	CachedCommitActions int
	// CachedCheckpointAdds bounds the parsed checkpoints kept, counted in
	// add actions (default 4<<20).
	CachedCheckpointAdds int
	// CachedDeletionVectors is how many decoded deletion vectors are
	// kept (default 256).
	CachedDeletionVectors int
	// CatalogManaged accepts the catalogManaged reader feature: set it
	// only when the storage presents the log as the table's catalog has
	// it, its ratified commits first (catalog/unity does, see
	// storage.CatalogLog). Without it such a table is refused with
	// CatalogManagedHint, by default a hint to open it through its
	// catalog.
	CatalogManaged     bool
	CatalogManagedHint string

	// ignoreCheckpoints hides checkpoints from the listing (tests compare
	// checkpoint replay with commit replay).
	ignoreCheckpoints bool
}

func (o *Options) fill() {
	if o.CachedSnapshots <= 0 {
		o.CachedSnapshots = 16
	}
	if o.CachedCommitActions <= 0 {
		o.CachedCommitActions = 1 << 20
	}
	if o.CachedCheckpointAdds <= 0 {
		o.CachedCheckpointAdds = 4 << 20
	}
	if o.CachedDeletionVectors <= 0 {
		o.CachedDeletionVectors = 256
	}
}

// Log is an opened Delta table's log. It caches what it has read of the log
// (the listing, parsed commits and checkpoints, built snapshots), so
// snapshots of many versions share work and AddFile pointers. Safe for
// concurrent use: concurrent requests for one version build it once.
type Log struct {
	st     storage.Storage
	opts   Options
	intern interner

	// One call at a time per version build, checkpoint and deletion
	// vector. A build goes on when its callers have left (Finish): its
	// snapshot is cached, and the next request joins it.
	builds    flight.Group[int64, *Snapshot]
	ckptReads flight.Group[string, ckptRead]
	dvReads   flight.Group[string, *roaring64.Bitmap]

	listMu sync.Mutex // serialises listing the log (held during the List call)

	mu      sync.Mutex
	lst     *logListing                           // guarded by mu
	commits *lru.Cache[int64, *actions]           // guarded by mu; parsed commits by version, cost: lines
	ckpts   *lru.Cache[string, *checkpointState]  // guarded by mu; by first file key, cost: adds+1
	snaps   *lru.Cache[int64, *Snapshot]          // guarded by mu; cost 1
	infos   map[int64]versionMeta                 // guarded by mu; for Versions
	dvs     *lru.Cache[string, *roaring64.Bitmap] // guarded by mu; by storage key + DV id, cost 1
	ict     ictConfig                             // guarded by mu
	vcache  versionsCache                         // guarded by mu
	// hints are the _last_checkpoint contents read so far, by the
	// version they describe (checkpoints are cross-checked against them).
	hints map[int64]lastCheckpointHint // guarded by mu
	// hintRead is the newest checkpoint version listed when
	// _last_checkpoint was last read.
	hintRead int64 // guarded by mu
	// untrusted are checkpoints (by key) that failed a cross-check, with
	// the reason: segments avoid them while another way to build a
	// version exists.
	untrusted map[string]error // guarded by mu
}

// Open opens the table at st: it reads _last_checkpoint (a hint), lists
// the log from there and builds the latest version. It fails with an
// *Error wrapping ErrNotDeltaTable when the location holds no Delta log,
// with an I/O error, and with the reason when no version at all can be
// reconstructed. A latest version that is refused (an unsupported
// protocol) or damaged (a corrupt commit or checkpoint, a missing sidecar,
// a gap) does not fail Open while an older version can be read: Snapshot
// of the latest fails with the reason, older versions stay readable.
func Open(ctx context.Context, st storage.Storage) (*Log, error) {
	return OpenWithOptions(ctx, st, Options{})
}

// OpenWithOptions is Open with options.
func OpenWithOptions(ctx context.Context, st storage.Storage, opts Options) (*Log, error) {
	opts.fill()
	t := &Log{
		st:        st,
		opts:      opts,
		builds:    flight.Group[int64, *Snapshot]{Finish: true},
		commits:   lru.New[int64, *actions](int64(opts.CachedCommitActions), nil),
		ckpts:     lru.New[string, *checkpointState](int64(opts.CachedCheckpointAdds), nil),
		snaps:     lru.New[int64, *Snapshot](int64(opts.CachedSnapshots), nil),
		infos:     map[int64]versionMeta{},
		dvs:       lru.New[string, *roaring64.Bitmap](int64(opts.CachedDeletionVectors), nil),
		ict:       ictConfig{since: -1},
		hints:     map[int64]lastCheckpointHint{},
		hintRead:  -1,
		untrusted: map[string]error{},
	}
	from := int64(0)
	if h, ok := readLastCheckpoint(ctx, st); ok {
		t.hints[h.Version] = h
		from = h.Version
	}
	files, err := t.listLog(ctx, from)
	if err != nil {
		return nil, t.err(-1, logDir, err)
	}
	lst := newListing(from, files)
	if c, ok := lst.checkpointAtOrBefore(lst.latest, nil); ok {
		t.hintRead = c.Version
	}
	if from > 0 {
		// The hint is usable only if the listing from it holds a complete
		// checkpoint: a stale hint still works (newer checkpoints are
		// listed), one pointing at a missing file does not.
		if _, ok := lst.checkpointAtOrBefore(lst.latest, nil); !ok {
			if files, err = t.listLog(ctx, 0); err != nil {
				return nil, t.err(-1, logDir, err)
			}
			lst = newListing(0, files)
		}
	}
	if lst.latest < 0 {
		return nil, t.err(-1, logDir, because(ErrNotDeltaTable, "not a Delta table: no commit or checkpoint files"))
	}
	t.lst = lst
	if _, err := t.Snapshot(ctx, lst.latest); err != nil {
		// An I/O failure fails Open. A latest version that is refused,
		// corrupt or cannot be reconstructed does not, as long as some
		// version can be: older versions stay readable whatever a later
		// one does, and Snapshot of the broken ones fails with the
		// reason.
		if !isDamage(err) && !errIsUnsupported(err) {
			return nil, err
		}
		e, eerr := t.Earliest(ctx)
		if eerr != nil {
			return nil, err
		}
		// A protocol refused from the first readable version on refuses
		// the whole table.
		if errIsUnsupported(err) {
			if _, eerr := t.Snapshot(ctx, e); errIsUnsupported(eerr) {
				return nil, err
			}
		}
	}
	return t, nil
}

// isDamage reports whether err is about the log's content (a corrupt or
// missing file, a gap) rather than a refused protocol or an I/O failure.
func isDamage(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLogGap) ||
		errors.Is(err, ErrVersionNotFound) || errors.Is(err, storage.ErrNotExist) ||
		errors.Is(err, storage.ErrNotRegular) || errors.Is(err, storage.ErrChanged)
}

// Storage is the table's storage.
func (t *Log) Storage() storage.Storage { return t.st }

// Location is the table's location, for messages.
func (t *Log) Location() string { return t.st.Location() }

func (t *Log) listing() *logListing {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lst
}

// Latest is the latest version as of the last listing of the log.
func (t *Log) Latest() int64 { return t.listing().latest }

// Refresh lists the log for new commits (from the oldest pending gap, else
// from the latest known version) and returns the new latest version.
// Snapshot(-1) and VersionAt use the last listing; Versions and History
// refresh it themselves.
func (t *Log) Refresh(ctx context.Context) (int64, error) {
	l, err := t.refresh(ctx)
	if err != nil {
		return -1, err
	}
	return l.latest, nil
}

func (t *Log) refresh(ctx context.Context) (*logListing, error) {
	t.listMu.Lock()
	defer t.listMu.Unlock()
	old := t.listing()
	files, err := t.listLog(ctx, old.relistFrom())
	if err != nil {
		return nil, t.err(-1, logDir, err)
	}
	n, changed := old.extend(files)
	t.readNewHint(ctx, n)
	t.mu.Lock()
	t.forgetChanged(changed)
	t.lst = n
	t.mu.Unlock()
	return n, nil
}

// readNewHint reads _last_checkpoint again when the listing has a complete
// checkpoint newer than any listed when it was last read, so that the
// checkpoints written while the table is open are cross-checked too (once
// per new checkpoint: a writer that never updates the hint costs no read
// per poll).
func (t *Log) readNewHint(ctx context.Context, l *logListing) {
	newest, ok := l.checkpointAtOrBefore(l.latest, nil)
	if !ok {
		return
	}
	t.mu.Lock()
	_, known := t.hints[newest.Version]
	stale := !known && newest.Version > t.hintRead
	if stale {
		t.hintRead = newest.Version
	}
	t.mu.Unlock()
	if !stale {
		return
	}
	if h, ok := readLastCheckpoint(ctx, t.st); ok {
		t.mu.Lock()
		t.hints[h.Version] = h
		t.mu.Unlock()
	}
}

// forgetChanged drops what was read of log files that changed after they
// were listed (a partial write that completed): parsed commits, the
// checkpoint, the version descriptions, and the snapshots that may have
// used them. Called with mu held.
func (t *Log) forgetChanged(changed []logFile) {
	for _, f := range changed {
		if f.Kind == kindCommit {
			t.commits.Remove(f.Version)
			delete(t.infos, f.Version)
		}
		for key := range t.untrusted {
			if parseLogPath(key).Version == f.Version {
				delete(t.untrusted, key)
			}
		}
		t.ckpts.RemoveFunc(func(key string, _ *checkpointState) bool { return parseLogPath(key).Version == f.Version })
		t.snaps.RemoveFunc(func(v int64, _ *Snapshot) bool { return v >= f.Version })
		t.vcache = versionsCache{}
	}
}

// fullListing returns a listing that starts at version 0, listing the
// whole log once if the current one started at the checkpoint hint.
func (t *Log) fullListing(ctx context.Context) (*logListing, error) {
	if l := t.listing(); l.from == 0 {
		return l, nil
	}
	t.listMu.Lock()
	defer t.listMu.Unlock()
	old := t.listing()
	if old.from == 0 {
		return old, nil
	}
	files, err := t.listLog(ctx, 0)
	if err != nil {
		return nil, t.err(-1, logDir, err)
	}
	// Keep what the partial listing knew, should the new listing miss it.
	n := newListing(0, append(files, flattenListing(old)...))
	if old.pending >= 0 && (n.pending < 0 || old.pending < n.pending) {
		n.pending = old.pending
		n.head = n.computeHead()
	}
	t.mu.Lock()
	t.lst = n
	t.mu.Unlock()
	return n, nil
}

// listLog lists the log from version from (see listLog).
func (t *Log) listLog(ctx context.Context, from int64) ([]logFile, error) {
	files, err := listLog(ctx, t.st, from)
	if err != nil || !t.opts.ignoreCheckpoints {
		return files, err
	}
	out := files[:0]
	for _, f := range files {
		switch f.Kind {
		case kindCheckpoint, kindMultiCheckpoint, kindUUIDCheckpoint:
		default:
			out = append(out, f)
		}
	}
	return out, nil
}

// flattenListing lists every file a listing knows.
func flattenListing(l *logListing) []logFile {
	out := slices.Clone(l.commits)
	for _, fs := range l.checkpoints {
		out = append(out, fs...)
	}
	return append(out, l.compactions...)
}

// Snapshot returns the state of the table at version (-1: the latest as
// of the last listing). Errors are *Error values naming the version and
// the file at fault; the cause wraps ErrVersionNotFound, ErrLogGap,
// ErrCorrupt, storage.ErrNotExist, or is an *UnsupportedFeatureError.
func (t *Log) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	if version == -1 {
		version = t.listing().latest
	}
	if version < 0 {
		return nil, t.err(-1, "", because(ErrVersionNotFound, "no version %d", version))
	}
	t.mu.Lock()
	s, ok := t.snaps.Get(version)
	t.mu.Unlock()
	if ok {
		return s, nil
	}
	s, _, err := t.builds.Do(ctx, version, func(ctx context.Context) (*Snapshot, error) {
		// A build that ended between the lookup above and this flight
		// has cached its snapshot: every caller gets that one.
		t.mu.Lock()
		s, ok := t.snaps.Get(version)
		t.mu.Unlock()
		if ok {
			return s, nil
		}
		return t.build(ctx, version)
	})
	if err != nil && ctx.Err() != nil {
		// This caller gave up (the build goes on: Finish).
		return nil, t.err(version, "", err)
	}
	return s, err
}

// build reconstructs version v: choose the segment, start from the best
// cached snapshot or the checkpoint, apply the commits after it. A
// checkpoint that fails a cross-check is marked untrusted and the segment
// chosen again without it (an older checkpoint, or the commits), once per
// checkpoint at most.
func (t *Log) build(ctx context.Context, v int64) (*Snapshot, error) {
	lst := t.listing()
	var seg *segment
	var st *state
	marked := map[string]bool{}
	for {
		var err error
		var file string
		var needFull bool
		seg, file, needFull, err = lst.segmentFor(v, t.isUntrusted)
		if needFull {
			if lst, err = t.fullListing(ctx); err != nil {
				return nil, err
			}
			seg, file, _, err = lst.segmentFor(v, t.isUntrusted)
		}
		if err != nil {
			return nil, t.segmentErr(lst, v, file, err)
		}
		st, file, err = t.startState(ctx, seg)
		if errors.Is(err, errInconsistent) && !marked[seg.Checkpoint.Key()] {
			marked[seg.Checkpoint.Key()] = true
			t.mu.Lock()
			t.untrusted[seg.Checkpoint.Key()] = err
			t.mu.Unlock()
			continue
		}
		if err != nil {
			return nil, t.err(v, file, err)
		}
		break
	}

	// Plan the files to apply: commits, or compactions where they fit.
	type step struct {
		f          logFile
		compaction bool
	}
	var steps []step
	for i := 0; i < len(seg.Commits); i++ {
		c := seg.Commits[i]
		if c.Version <= st.version {
			continue
		}
		if t.opts.UseLogCompaction {
			if cf, ok := lst.compactionFrom(c.Version, v); ok {
				steps = append(steps, step{cf, true})
				for i+1 < len(seg.Commits) && seg.Commits[i+1].Version <= cf.End {
					i++
				}
				continue
			}
		}
		steps = append(steps, step{c, false})
	}
	// The commit of version v itself, for its commitInfo (also when a
	// compaction or the checkpoint covers it).
	last, hasCommit := lst.commit(v)
	files := make([]logFile, 0, len(steps)+1)
	for _, s := range steps {
		files = append(files, s.f)
	}
	if hasCommit && (len(steps) == 0 || steps[len(steps)-1].compaction) {
		files = append(files, last)
	}
	parsed, err := t.loadJSON(ctx, v, files)
	if err != nil {
		return nil, err
	}
	for i, s := range steps {
		if s.compaction {
			st.applyCompaction(parsed[i], s.f.Key, s.f.End)
		} else {
			st.apply(parsed[i], s.f.Key, s.f.Version)
		}
	}
	st.version = v
	var ci *CommitInfo
	if hasCommit {
		ci = parsed[len(parsed)-1].CommitInfo
	}
	return t.finish(v, st, ci, lst)
}

// finish checks the replayed state and makes it a Snapshot.
func (t *Log) finish(v int64, st *state, ci *CommitInfo, lst *logListing) (*Snapshot, error) {
	if st.protocol == nil {
		return nil, t.err(v, "", corruptf("no protocol action in the log up to this version"))
	}
	if st.metadata == nil {
		return nil, t.err(v, "", corruptf("no metaData action in the log up to this version"))
	}
	if v >= lst.latest {
		t.mu.Lock()
		t.ict = ictFromMetadata(st.metadata)
		t.mu.Unlock()
	}
	if err := checkProtocol(st.protocol, t.opts); err != nil {
		return nil, t.err(v, st.protocolFrom, err)
	}
	schema, err := ParseSchema(st.metadata.SchemaString)
	if err != nil {
		return nil, t.err(v, st.metadataFrom, corruptf("metaData: %v", err))
	}
	files := st.sortedFiles()
	if err := checkRowSum(files); err != nil {
		return nil, t.err(v, "", err)
	}
	s := &Snapshot{
		Table:        t,
		Version:      v,
		Protocol:     *st.protocol,
		Metadata:     *st.metadata,
		Schema:       schema,
		Files:        files,
		protocol:     st.protocol,
		metadata:     st.metadata,
		protocolFrom: st.protocolFrom,
		metadataFrom: st.metadataFrom,
	}
	if ci != nil {
		s.CommitInfo = *ci
	}
	s.Timestamp = t.commitTime(v, ci, lst)
	t.mu.Lock()
	t.snaps.Add(v, s, 1)
	t.mu.Unlock()
	return s, nil
}

// startState is the state seg's commits apply to: the newest cached
// snapshot inside the segment, else its checkpoint, else the empty table.
// On failure it returns the key of the file at fault.
func (t *Log) startState(ctx context.Context, seg *segment) (*state, string, error) {
	if c := t.cachedStart(seg); c != nil {
		return stateFromSnapshot(c), "", nil
	}
	if seg.Checkpoint == nil {
		return newState(), "", nil
	}
	cs, file, err := t.checkpoint(ctx, *seg.Checkpoint)
	if err != nil {
		return nil, file, err
	}
	return stateFromCheckpoint(cs, seg.Checkpoint.Key()), "", nil
}

// isUntrusted reports whether the checkpoint with this key failed a
// cross-check.
func (t *Log) isUntrusted(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.untrusted[key]
	return ok
}

// segmentErr is the error for a version without a usable segment: when
// the checkpoint it would have used was found inconsistent, that is the
// cause (nothing else rebuilds the version); else the segment's own.
func (t *Log) segmentErr(lst *logListing, v int64, file string, err error) error {
	if s0, _, _, e0 := lst.segmentFor(v, nil); e0 == nil && s0.Checkpoint != nil {
		key := s0.Checkpoint.Key()
		t.mu.Lock()
		uerr := t.untrusted[key]
		t.mu.Unlock()
		if uerr != nil {
			return t.err(v, key, because(ErrCorrupt, "%v; no older checkpoint or commits can rebuild this version", uerr))
		}
	}
	return t.err(v, file, err)
}

// checkRowSum refuses live row counts whose sum overflows an int64, so
// that Snapshot.NumRows (and every caller adding them up) gets a true sum:
// they are claims of the log.
func checkRowSum(files []*AddFile) error {
	var n int64
	for _, f := range files {
		r := f.LiveRows()
		if r < 0 {
			continue
		}
		if n > math.MaxInt64-r {
			return corruptf("live row counts overflow: the log claims more than %d rows", int64(math.MaxInt64))
		}
		n += r
	}
	return nil
}

// cachedStart is the newest cached snapshot the segment can continue
// from: at or after the segment's checkpoint, before its version.
func (t *Log) cachedStart(seg *segment) *Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *Snapshot
	for v, s := range t.snaps.All() {
		if v >= seg.Base() && v < seg.Version && (best == nil || v > best.Version) {
			best = s
		}
	}
	return best
}

// checkpoint reads (or returns the cached) checkpoint c, its adds
// interned. On failure it returns the key of the file at fault.
func (t *Log) checkpoint(ctx context.Context, c checkpointRef) (*checkpointState, string, error) {
	key := c.Key()
	t.mu.Lock()
	cs, ok := t.ckpts.Get(key)
	t.mu.Unlock()
	if ok {
		return cs, "", nil
	}
	r, _, err := t.ckptReads.Do(ctx, key, func(ctx context.Context) (ckptRead, error) {
		cs, file, err := readCheckpoint(ctx, t.st, c)
		if err == nil {
			t.mu.Lock()
			h, ok := t.hints[c.Version]
			t.mu.Unlock()
			hint := &h
			if !ok {
				hint = nil
			}
			err = crossCheck(c, cs, hint)
		}
		if err != nil {
			if file == "" {
				file = key
			}
			return ckptRead{file: file}, err
		}
		for i, a := range cs.Adds {
			cs.Adds[i] = t.intern.intern(a)
		}
		t.mu.Lock()
		t.ckpts.Add(key, cs, int64(len(cs.Adds))+1)
		t.mu.Unlock()
		return ckptRead{cs: cs}, nil
	})
	return r.cs, r.file, err
}

// ckptRead is the result of reading a checkpoint: its state, or the key of
// the file at fault.
type ckptRead struct {
	cs   *checkpointState
	file string
}

// loadJSON parses commit and compaction files (cached by commit version),
// reading the missing ones in parallel. v is the version being built, for
// errors.
func (t *Log) loadJSON(ctx context.Context, v int64, files []logFile) ([]*actions, error) {
	out := make([]*actions, len(files))
	var missing []int
	t.mu.Lock()
	for i, f := range files {
		if f.Kind == kindCommit {
			if a, ok := t.commits.Get(f.Version); ok {
				out[i] = a
				continue
			}
		}
		missing = append(missing, i)
	}
	t.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	// No cancellation on the first failure: the error reported is the
	// oldest bad file's, not whichever failed first.
	var g errgroup.Group
	g.SetLimit(8)
	errs := make([]error, len(files))
	for _, i := range missing {
		f := files[i]
		g.Go(func() error {
			a, err := t.readJSON(ctx, f)
			if err != nil {
				errs[i] = t.err(v, f.Key, err)
				return errs[i]
			}
			out[i] = a
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		for _, e := range errs {
			if e != nil {
				return nil, e
			}
		}
		return nil, err
	}
	t.mu.Lock()
	for _, i := range missing {
		if files[i].Kind == kindCommit {
			t.commits.Add(files[i].Version, out[i], max(int64(out[i].Lines), 1))
		}
	}
	t.mu.Unlock()
	return out, nil
}

// readJSON reads and parses one JSON log file, interning its adds.
func (t *Log) readJSON(ctx context.Context, f logFile) (*actions, error) {
	data, err := readAllSized(ctx, t.st, f.Key, f.Size)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Every writer writes at least one action; an empty file is a
		// write that did not land (or damage), never an empty commit.
		return nil, corruptf("the file is empty: no actions")
	}
	a, err := parseActions(data)
	if err != nil {
		return nil, err
	}
	for i := range a.Ops {
		if a.Ops[i].Add != nil {
			a.Ops[i].Add = t.intern.intern(a.Ops[i].Add)
		}
	}
	return a, nil
}

// compactionFrom returns the compaction file starting at version from
// that reaches furthest without passing to.
func (l *logListing) compactionFrom(from, to int64) (logFile, bool) {
	var best logFile
	ok := false
	for _, c := range l.compactions {
		if c.Version == from && c.End <= to && (!ok || c.End > best.End) {
			best, ok = c, true
		}
	}
	return best, ok
}

// errIsUnsupported reports whether err is a protocol refusal.
func errIsUnsupported(err error) bool {
	var u *UnsupportedFeatureError
	return errors.As(err, &u)
}

// versionMeta is what Versions needs of one commit.
type versionMeta struct {
	operation, engine string
	ict               *int64
	modTime           time.Time
}
