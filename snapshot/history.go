package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
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
// the latest version without a gap in the file names; a version whose
// files turn out to be damaged is listed, and Snapshot of it fails with
// the reason. Commit times follow the rules of VersionAt; a version whose
// commit file was cleaned up (a checkpoint without its commit) has the
// checkpoint's time. Operation and Engine are set where the commit has
// been read (in-commit-timestamp versions, or after History or Snapshot
// of the version) and empty otherwise: a Snapshot's CommitInfo has them.
func (t *Table) Versions(ctx context.Context) ([]VersionInfo, error) {
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
// commits run without a gap to the latest version.
func (t *Table) Earliest(ctx context.Context) (int64, error) {
	lst, err := t.fullListing(ctx)
	if err != nil {
		return -1, err
	}
	e := lst.earliest()
	if e < 0 {
		_, file, _, err := lst.segmentFor(lst.latest)
		if err == nil {
			err = because(ErrVersionNotFound, "no version can be reconstructed")
		}
		return -1, t.err(lst.latest, file, err)
	}
	return e, nil
}

// versionInfos describes every readable version of the listing.
func (t *Table) versionInfos(ctx context.Context, lst *logListing) ([]VersionInfo, error) {
	if lst.from > 0 {
		var err error
		if lst, err = t.fullListing(ctx); err != nil {
			return nil, err
		}
	}
	e, err := t.Earliest(ctx)
	if err != nil {
		return nil, err
	}
	n := lst.latest - e + 1
	// Versions already described in the last answer are kept (commits
	// are immutable); only new ones are read.
	t.mu.Lock()
	cfg, c := t.ict, t.vcache
	t.mu.Unlock()
	var prefix []VersionInfo
	if c.e == e && c.ict == cfg && int64(len(c.list)) <= n {
		prefix = c.list
	}
	start := e + int64(len(prefix))
	metas := make([]versionMeta, lst.latest-start+1)
	have := make([]bool, len(metas))
	t.mu.Lock()
	for v := start; v <= lst.latest; v++ {
		if m, ok := t.infos[v]; ok {
			metas[v-start], have[v-start] = m, true
		} else if a, ok := t.commits.get(v); ok {
			metas[v-start], have[v-start] = metaOf(a.CommitInfo, fileTime(lst, v)), true
		}
	}
	t.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	partial := make([]bool, len(metas))
	for v := start; v <= lst.latest; v++ {
		if have[v-start] {
			continue
		}
		f, ok := lst.commit(v)
		if !ok {
			metas[v-start] = versionMeta{modTime: fileTime(lst, v)}
			continue
		}
		if !cfg.uses(v) {
			// The file time is the commit time: no read. The operation
			// stays unknown until the commit is read for another reason.
			metas[v-start], partial[v-start] = versionMeta{modTime: f.ModTime}, true
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
			metas[v-start] = metaOf(ci, f.ModTime)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]VersionInfo, n)
	copy(out, prefix)
	for i, m := range metas {
		v := start + int64(i)
		out[v-e] = VersionInfo{Version: v, Operation: m.operation, Engine: m.engine, Timestamp: cfg.time(v, m.ict, m.modTime)}
	}
	t.mu.Lock()
	for i, m := range metas {
		if !partial[i] {
			t.infos[start+int64(i)] = m
		}
	}
	t.vcache = versionsCache{e: e, ict: cfg, list: out}
	t.mu.Unlock()
	return slices.Clone(out), nil
}

// versionsCache is the last answer of versionInfos.
type versionsCache struct {
	e    int64
	ict  ictConfig
	list []VersionInfo // versions e, e+1, ...; never modified
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
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
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
func (t *Table) History(ctx context.Context, count FileRows, fn func(VersionStats) error) error {
	if _, err := t.refresh(ctx); err != nil {
		return err
	}
	lst, err := t.fullListing(ctx)
	if err != nil {
		return err
	}
	e, err := t.Earliest(ctx)
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
	for v := e + 1; v <= lst.latest; v += batch {
		end := min(v+batch-1, lst.latest)
		files := make([]logFile, 0, end-v+1)
		for u := v; u <= end; u++ {
			f, ok := lst.commit(u)
			if !ok {
				_, file, _, err := lst.segmentFor(u)
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
				if err := CheckProtocol(protocol); err != nil {
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
	return nil
}

// info is the VersionInfo of a snapshot.
func (s *Snapshot) info() VersionInfo {
	return VersionInfo{Version: s.Version, Timestamp: s.Timestamp, Operation: s.CommitInfo.Operation, Engine: s.CommitInfo.Engine()}
}

// historyState is the live file set while walking versions, with running
// row counts.
type historyState struct {
	t       *Table
	files   map[fileID]*AddFile
	known   int64 // live rows of files whose rows are known
	unknown int   // live files without numRecords and not counted

	count    FileRows
	physical map[string]int64 // data file path -> rows counted by count
}

func newHistoryState(t *Table, count FileRows) *historyState {
	return &historyState{t: t, files: make(map[fileID]*AddFile), count: count, physical: make(map[string]int64)}
}

// init starts the walk at snapshot s.
func (h *historyState) init(ctx context.Context, s *Snapshot) error {
	if err := h.countFiles(ctx, s.Version, s.Files); err != nil {
		return err
	}
	for _, f := range s.Files {
		h.files[f.id()] = f
		h.add(f, 1)
	}
	return nil
}

// liveRows is f's live row count, -1 when unknown.
func (h *historyState) liveRows(f *AddFile) int64 {
	if r := f.LiveRows(); r >= 0 {
		return r
	}
	n, ok := h.physical[f.Path]
	if !ok {
		return -1
	}
	if f.DeletionVector != nil {
		n -= f.DeletionVector.Cardinality
	}
	return n
}

func (h *historyState) add(f *AddFile, sign int64) {
	if r := h.liveRows(f); r >= 0 {
		h.known += sign * r
	} else {
		h.unknown += int(sign)
	}
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
			h.add(old, -1)
			delete(h.files, op.ID)
		}
		if op.Add != nil {
			h.files[op.ID] = op.Add
			h.add(op.Add, 1)
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
