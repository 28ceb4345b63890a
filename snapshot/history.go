package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
)

// Listing versions: Versions (what the filesystem shows) needs only each
// version's commit time, which is the commit file's modification time from
// the listing unless in-commit timestamps are on: it reads the commitInfo of
// those versions only, so a table of 100,000 commits lists in one listing
// of _delta_log/. History (what `deltafs log` prints) replays the log once,
// oldest to newest, to count live files and rows at every version.

// Versions lists the readable versions, oldest first, listing the log
// again to find new commits. The readable versions run from Earliest to
// the newest version reachable without a missing commit; the versions
// after a missing commit that have a file of their own follow them (a
// gap may still fill: a writer's commit not yet visible), and Snapshot of
// those fails naming the missing file until it does. A version whose
// files turn out to be damaged is listed too, and Snapshot of it fails
// with the reason. Commit times follow the rules of VersionAt; a version
// whose commit file was cleaned up (a checkpoint without its commit) has
// the checkpoint's time. Operation and Engine are set where the commit
// has been read (in-commit-timestamp versions, or after History or
// Snapshot of the version) and empty otherwise: a Snapshot's CommitInfo
// has them.
func (t *Log) Versions(ctx context.Context) ([]VersionInfo, error) {
	lst, err := t.refresh(ctx)
	if err != nil {
		return nil, err
	}
	// Build the latest version: its metadata says whether commits carry
	// in-commit timestamps. A protocol this reader refuses, or damage,
	// does not hide the versions (Snapshot of them says what is wrong).
	if _, err := t.Snapshot(ctx, lst.latest); err != nil && !errIsUnsupported(err) && !isDamage(err) {
		return nil, err
	}
	return t.versionInfos(ctx, lst)
}

// Earliest is the earliest readable version: 0 for a log that starts at
// version 0 without gaps, else the oldest checkpoint after which the
// commits run without a gap to the newest reachable version.
func (t *Log) Earliest(ctx context.Context) (int64, error) {
	lst, err := t.fullListing(ctx)
	if err != nil {
		return -1, err
	}
	return t.earliestOf(lst)
}

// earliestOf is Earliest in the listing lst (from version 0).
func (t *Log) earliestOf(lst *logListing) (int64, error) {
	e := lst.earliest(t.isUntrusted)
	if e < 0 {
		_, file, _, err := lst.segmentFor(lst.latest, t.isUntrusted)
		if err == nil {
			err = because(ErrVersionNotFound, "no version can be reconstructed")
		}
		return -1, t.segmentErr(lst, lst.latest, file, err)
	}
	return e, nil
}

// versionInfos describes every readable version of the listing.
func (t *Log) versionInfos(ctx context.Context, lst *logListing) ([]VersionInfo, error) {
	if lst.from > 0 {
		var err error
		if lst, err = t.fullListing(ctx); err != nil {
			return nil, err
		}
	}
	e, err := t.earliestOf(lst)
	if err != nil {
		return nil, err
	}
	n := lst.head - e + 1 // versions e..head, all of them listed
	// Versions already described in the last answer are kept (commits
	// are immutable); only new ones are read.
	t.mu.Lock()
	cfg, c := t.ict, t.vcache
	t.mu.Unlock()
	var prefix []VersionInfo
	if c.e == e && c.ict == cfg && int64(len(c.list)) <= n {
		prefix = c.list
	}
	var todo []int64
	for v := e + int64(len(prefix)); v <= lst.head; v++ {
		todo = append(todo, v)
	}
	dense := len(todo)
	todo = append(todo, lst.beyondHead()...)
	metas := make([]versionMeta, len(todo))
	have := make([]bool, len(todo))
	t.mu.Lock()
	for i, v := range todo {
		if m, ok := t.infos[v]; ok {
			metas[i], have[i] = m, true
		} else if a, ok := t.commits.Get(v); ok {
			metas[i], have[i] = metaOf(a.CommitInfo, fileTime(lst, v)), true
		}
	}
	t.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	partial := make([]bool, len(metas))
	for i, v := range todo {
		if have[i] {
			continue
		}
		f, ok := lst.commit(v)
		if !ok {
			metas[i] = versionMeta{modTime: fileTime(lst, v)}
			continue
		}
		if !cfg.uses(v) {
			// The file time is the commit time: no read. The operation
			// stays unknown until the commit is read for another reason.
			metas[i], partial[i] = versionMeta{modTime: f.ModTime}, true
			continue
		}
		g.Go(func() error {
			data, err := readAllSized(gctx, t.st, f.Key, f.Size)
			if err != nil {
				return t.err(v, f.Key, err)
			}
			// A damaged commitInfo leaves the version listed without an
			// operation; Snapshot of it reports the damage.
			ci, _ := parseCommitInfo(data)
			metas[i] = metaOf(ci, f.ModTime)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]VersionInfo, 0, len(prefix)+len(todo))
	out = append(out, prefix...)
	for i, m := range metas {
		v := todo[i]
		out = append(out, VersionInfo{Version: v, Operation: m.operation, Engine: m.engine, Timestamp: cfg.time(v, m.ict, m.modTime)})
	}
	t.mu.Lock()
	for i, m := range metas {
		if !partial[i] {
			t.infos[todo[i]] = m
		}
	}
	t.vcache = versionsCache{e: e, ict: cfg, list: slices.Clip(out[:len(prefix)+dense])}
	t.mu.Unlock()
	return slices.Clone(out), nil
}

// versionsCache is the last answer of versionInfos.
type versionsCache struct {
	e    int64
	ict  ictConfig
	list []VersionInfo // versions e, e+1, ... up to a head; never modified
}

func metaOf(ci *CommitInfo, mod time.Time) versionMeta {
	m := versionMeta{modTime: mod}
	if ci != nil {
		m.operation, m.engine, m.ict = ci.Operation, ci.Engine(), ci.InCommitTimestamp
	}
	return m
}

// parseCommitInfo finds and decodes the commitInfo action of a commit
// (nil when it has none), without decoding the other actions.
func parseCommitInfo(data []byte) (*CommitInfo, error) {
	line := 0
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		line++
		if !bytes.Contains(l, []byte(`"commitInfo"`)) {
			continue
		}
		var a struct {
			CommitInfo *CommitInfo `json:"commitInfo"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(l), &a); err != nil {
			return nil, corruptf("line %d: %v", line, err)
		}
		if a.CommitInfo != nil {
			return a.CommitInfo, nil
		}
	}
	return nil, nil
}

// VersionStats is a version with its live data, as `deltafs log` prints it.
type VersionStats struct {
	VersionInfo
	Files int   // live data files
	Rows  int64 // live rows; -1 when some live file has no numRecords and no FileRows counter was given
}

// FileRows counts the physical rows of a data file (storage key, size in
// bytes) whose add action has no numRecords, from the file itself (its
// Parquet footer). History calls it at most once per data file.
type FileRows func(ctx context.Context, key string, size int64) (int64, error)

// History calls fn for every readable version, oldest first, with its live
// file and row counts. It refreshes the listing, builds the earliest
// version once and then applies one commit per version, so the whole walk
// reads each commit once. It stops at the first error (fn's, or a version
// that cannot be read, named as Snapshot would).
//
// Row counts come from the log's statistics. Where a live file has none,
// rows is -1, unless count is given: then that file's rows are counted once
// from the file itself (less its deletion vector's cardinality), and an
// unreadable file is an error naming the version and file.
func (t *Log) History(ctx context.Context, count FileRows, fn func(VersionStats) error) error {
	if _, err := t.refresh(ctx); err != nil {
		return err
	}
	lst, err := t.fullListing(ctx)
	if err != nil {
		return err
	}
	e, err := t.earliestOf(lst)
	if err != nil {
		return err
	}
	snap, err := t.Snapshot(ctx, e)
	if err != nil {
		return err
	}
	// Keep the in-commit timestamp setting current (the latest metadata).
	if lst.latest != e {
		// (Damage there is reported when the walk reaches it.)
		if _, err := t.Snapshot(ctx, lst.latest); err != nil && !errIsUnsupported(err) && !isDamage(err) {
			return err
		}
	}
	h := newHistoryState(t, count)
	if err := h.init(ctx, snap); err != nil {
		return err
	}
	if err := fn(VersionStats{VersionInfo: snap.info(), Files: len(h.files), Rows: h.rows()}); err != nil {
		return err
	}
	const batch = 32
	protocol := snap.protocol
	for v := e + 1; v <= lst.head; v += batch {
		end := min(v+batch-1, lst.head)
		files := make([]logFile, 0, end-v+1)
		for u := v; u <= end; u++ {
			f, ok := lst.commit(u)
			if !ok {
				_, file, _, err := lst.segmentFor(u, t.isUntrusted)
				if err == nil {
					err = because(ErrLogGap, "commit %d is missing", u)
				}
				return t.err(u, file, err)
			}
			files = append(files, f)
		}
		// Read the batch in parallel, without cancelling on the first
		// failure: the versions before a bad commit are still printed,
		// and the error is the oldest bad commit's.
		parsed := make([]*actions, len(files))
		errs := make([]error, len(files))
		var g errgroup.Group
		g.SetLimit(8)
		for i, f := range files {
			g.Go(func() error {
				a, err := t.readJSON(ctx, f)
				if err != nil {
					errs[i] = t.err(f.Version, f.Key, err)
					return errs[i]
				}
				parsed[i] = a
				return nil
			})
		}
		g.Wait()
		for i, a := range parsed {
			f := files[i]
			if a == nil {
				return errs[i]
			}
			if a.Protocol != nil && a.Protocol != protocol {
				protocol = a.Protocol
				if err := checkProtocol(protocol, t.opts); err != nil {
					return t.err(f.Version, f.Key, err)
				}
			}
			if err := h.apply(ctx, f.Version, a); err != nil {
				return err
			}
			m := metaOf(a.CommitInfo, f.ModTime)
			t.mu.Lock()
			t.infos[f.Version] = m
			t.mu.Unlock()
			info := VersionInfo{Version: f.Version, Operation: m.operation, Engine: m.engine,
				Timestamp: t.versionTime(f.Version, m.ict, m.modTime)}
			if err := fn(VersionStats{VersionInfo: info, Files: len(h.files), Rows: h.rows()}); err != nil {
				return err
			}
		}
	}
	// Versions after a missing commit: the first one says what is wrong.
	if next := lst.beyondHead(); len(next) > 0 {
		_, err := t.Snapshot(ctx, next[0])
		if err == nil {
			err = t.err(next[0], commitKey(lst.head+1), because(ErrLogGap, "missing commit file: the log jumps from version %d to %d", lst.head, next[0]))
		}
		return err
	}
	return nil
}

// info is the VersionInfo of a snapshot.
func (s *Snapshot) info() VersionInfo {
	return VersionInfo{Version: s.Version, Timestamp: s.Timestamp, Operation: s.CommitInfo.Operation, Engine: s.CommitInfo.Engine()}
}

// historyState is the live file set while walking versions, with running
// row counts.
type historyState struct {
	t       *Log
	files   map[fileID]*AddFile
	known   int64 // live rows of files whose rows are known
	unknown int   // live files without numRecords and not counted

	count    FileRows
	physical map[string]int64 // data file path -> rows counted by count
}

func newHistoryState(t *Log, count FileRows) *historyState {
	return &historyState{t: t, files: make(map[fileID]*AddFile), count: count, physical: make(map[string]int64)}
}

// init starts the walk at snapshot s.
func (h *historyState) init(ctx context.Context, s *Snapshot) error {
	if err := h.countFiles(ctx, s.Version, s.Files); err != nil {
		return err
	}
	for _, f := range s.Files {
		h.files[f.id()] = f
		if err := h.add(f, 1); err != nil {
			return h.t.err(s.Version, f.Path, err)
		}
	}
	return nil
}

// liveRows is f's live row count, -1 when unknown.
func (h *historyState) liveRows(f *AddFile) (int64, error) {
	if r := f.LiveRows(); r >= 0 {
		return r, nil
	}
	n, ok := h.physical[f.Path]
	if !ok {
		return -1, nil
	}
	if f.DeletionVector != nil {
		if f.DeletionVector.Cardinality > n {
			return -1, corruptf("deletion vector removes %d rows of a file of %d", f.DeletionVector.Cardinality, n)
		}
		n -= f.DeletionVector.Cardinality
	}
	return n, nil
}

// add counts f in (sign 1) or out (sign -1) of the live rows. Claimed
// row counts that overflow the total are an error, not a wrapped sum.
func (h *historyState) add(f *AddFile, sign int64) error {
	r, err := h.liveRows(f)
	if err != nil {
		return err
	}
	if r < 0 {
		h.unknown += int(sign)
		return nil
	}
	if sign > 0 {
		if h.known > math.MaxInt64-r {
			return corruptf("live row counts overflow: the log claims more than %d rows", int64(math.MaxInt64))
		}
		h.known += r
	} else {
		h.known -= r
	}
	return nil
}

// countFiles counts, in parallel, the rows of the files without
// numRecords that are not counted yet (nothing without a counter).
func (h *historyState) countFiles(ctx context.Context, version int64, files []*AddFile) error {
	if h.count == nil {
		return nil
	}
	var todo []*AddFile
	seen := make(map[string]bool)
	for _, f := range files {
		if f.NumRecords >= 0 || seen[f.Path] {
			continue
		}
		if _, ok := h.physical[f.Path]; !ok {
			seen[f.Path] = true
			todo = append(todo, f)
		}
	}
	rows := make([]int64, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, f := range todo {
		g.Go(func() error {
			key, err := fileKey(h.t.st.Location(), f.Path)
			if err == nil {
				rows[i], err = h.count(gctx, key, f.Size)
			}
			if err != nil {
				return h.t.err(version, f.Path, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, f := range todo {
		h.physical[f.Path] = rows[i]
	}
	return nil
}

// apply applies commit a, which made version.
func (h *historyState) apply(ctx context.Context, version int64, a *actions) error {
	var adds []*AddFile
	for _, op := range a.Ops {
		if op.Add != nil {
			adds = append(adds, op.Add)
		}
	}
	if err := h.countFiles(ctx, version, adds); err != nil {
		return err
	}
	for _, op := range a.Ops {
		if old, ok := h.files[op.ID]; ok {
			if err := h.add(old, -1); err != nil {
				return h.t.err(version, old.Path, err)
			}
			delete(h.files, op.ID)
		}
		if op.Add != nil {
			h.files[op.ID] = op.Add
			if err := h.add(op.Add, 1); err != nil {
				return h.t.err(version, op.Add.Path, err)
			}
		}
	}
	return nil
}

func (h *historyState) rows() int64 {
	if h.unknown > 0 {
		return -1
	}
	return h.known
}
