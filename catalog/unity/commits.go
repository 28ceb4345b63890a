package unity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Catalog-managed tables (the Delta protocol's "Catalog-managed tables"):
// the newest commits are ratified by the catalog and stay in
// _delta_log/_staged_commits/<v>.<uuid>.json until they are published as
// _delta_log/<v>.json. catalogLog presents such a table's log as its
// catalog has it, so log replay reads it like any log:
//
//   - every listing of the log asks the catalog (loadTable) again;
//   - each ratified commit v is listed as _delta_log/<v>.json and read
//     from its staged file; a published _delta_log/<v>.json of a ratified
//     version must be byte for byte the same, or version v is corrupt;
//   - nothing past the catalog's latest version is listed.

// LoadTimeout bounds one loadTable call of a listing (retries included).
var LoadTimeout = 30 * time.Second

const (
	logDir    = "_delta_log/"
	stagedDir = logDir + "_staged_commits/"
)

// stagedName is a staged commit's file name: <v>.<uuid>.json.
var stagedName = regexp.MustCompile(`^([0-9]{20})\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.json$`)

// ratified is one ratified, unpublished commit as the catalog lists it.
type ratified struct {
	key  string // of the staged file
	size int64  // the catalog's file-size
	// bad, when set, fails every read of the version (a staged file
	// that is missing or not what the catalog says).
	bad error
	// info is the staged file's, listed as _delta_log/<v>.json.
	info storage.ObjectInfo
}

// catalogView is one accepted loadTable answer.
type catalogView struct {
	latest  int64
	commits map[int64]*ratified
}

// catalogLog is the storage of a catalog-managed table: its storage
// location, its log as the catalog has it (see above).
type catalogLog struct {
	storage.Storage
	loc  string                                               // uc://...
	load func(ctx context.Context) (LoadTableResponse, error) // loadTable
	// describe says what a failed loadTable means, in one line.
	describe func(err error) string

	mu   sync.Mutex
	view *catalogView
	// published are the _delta_log/<v>.json files the last listing found
	// for ratified versions (compared with the catalog's commit).
	published map[int64]storage.ObjectInfo
	// gone, when set, fails every request: the catalog refuses the
	// table now (dropped, access revoked), until it answers again.
	gone error
}

// newCatalogLog presents st as the log of the catalog's first answer.
func newCatalogLog(ctx context.Context, st storage.Storage, loc string, first LoadTableResponse,
	load func(ctx context.Context) (LoadTableResponse, error), describe func(error) string) (*catalogLog, error) {
	c := &catalogLog{Storage: st, loc: loc, load: load, describe: describe, published: map[int64]storage.ObjectInfo{}}
	v, err := c.accept(ctx, first)
	if err != nil {
		return nil, err
	}
	c.view = v
	return c, nil
}

// catalogError is a table-wide failure of the catalog, named by the
// table (it prints as it is: snapshot adds no file or version).
type catalogError struct {
	msg string
	err error
}

func (e *catalogError) Error() string   { return e.msg }
func (e *catalogError) Unwrap() error   { return e.err }
func (e *catalogError) TableWide() bool { return true }

// corruptCommit is the cause of a failed ratified commit: it matches
// snapshot.ErrCorrupt, so older versions stay readable.
type corruptCommit struct{ msg string }

func (e *corruptCommit) Error() string { return e.msg }
func (e *corruptCommit) Unwrap() error { return snapshot.ErrCorrupt }

// accept checks an answer against itself and the last accepted one and
// stats the staged files it names. Its errors name the table.
func (c *catalogLog) accept(ctx context.Context, a LoadTableResponse) (*catalogView, error) {
	bad := func(format string, args ...any) error {
		return &catalogError{msg: c.loc + ": the catalog's answer is inconsistent: " + fmt.Sprintf(format, args...)}
	}
	v := &catalogView{latest: -1, commits: map[int64]*ratified{}}
	if len(a.Commits) > 100_000 {
		return nil, bad("%d unpublished commits", len(a.Commits))
	}
	for _, cm := range a.Commits {
		if cm.Version == nil || *cm.Version < 0 {
			return nil, bad("a commit without a valid version")
		}
		n := *cm.Version
		if v.commits[n] != nil {
			return nil, bad("version %d is ratified twice", n)
		}
		r := &ratified{key: stagedDir + cm.FileName}
		m := stagedName.FindStringSubmatch(cm.FileName)
		switch {
		case m == nil:
			r.bad = &corruptCommit{fmt.Sprintf("the catalog ratified it as %q, not a staged commit's name (<version>.<uuid>.json)", cm.FileName)}
			r.key = ""
		case m[1] != fmt.Sprintf("%020d", n):
			r.bad = &corruptCommit{fmt.Sprintf("the catalog ratified %s for it, a commit proposed for version %s", r.key, strings.TrimLeft(m[1], "0"))}
		}
		if cm.FileSize == nil || *cm.FileSize < 0 {
			return nil, bad("version %d has no valid file-size", n)
		}
		r.size = *cm.FileSize
		v.commits[n] = r
		v.latest = max(v.latest, n)
	}
	if a.LatestTableVersion != nil {
		if *a.LatestTableVersion < 0 {
			return nil, bad("latest-table-version %d", *a.LatestTableVersion)
		}
		if len(v.commits) > 0 && *a.LatestTableVersion != v.latest {
			return nil, bad("latest-table-version %d, but the newest ratified commit is version %d", *a.LatestTableVersion, v.latest)
		}
		v.latest = *a.LatestTableVersion
	} else if len(v.commits) == 0 {
		return nil, bad("no latest-table-version and no commits")
	}
	for n := v.latest; n > v.latest-int64(len(v.commits)); n-- {
		if v.commits[n] == nil {
			return nil, bad("the ratified commits skip version %d (they must be contiguous up to version %d)", n, v.latest)
		}
	}
	c.mu.Lock()
	old := c.view
	c.mu.Unlock()
	if old != nil {
		if v.latest < old.latest {
			return nil, bad("its latest version went back from %d to %d", old.latest, v.latest)
		}
		for n, r := range v.commits {
			if o := old.commits[n]; o != nil && o.key != r.key {
				return nil, bad("version %d was ratified as %s, now as %s", n, o.key, r.key)
			}
		}
	}
	// Stat the staged files not seen before (staged files never change),
	// a few at a time.
	var g errgroup.Group
	g.SetLimit(8)
	for n, r := range v.commits {
		if r.bad != nil {
			continue
		}
		if o := old; o != nil && o.commits[n] != nil && o.commits[n].bad == nil && o.commits[n].size == r.size {
			r.info = o.commits[n].info
			continue
		}
		g.Go(func() error {
			info, err := c.Storage.Stat(ctx, r.key)
			switch {
			case errors.Is(err, storage.ErrNotExist) && !storage.IsTableWide(err):
				r.bad = &corruptCommit{fmt.Sprintf("the catalog ratified it as %s, which does not exist", r.key)}
			case err != nil:
				return err
			case info.Size != r.size:
				r.bad = &corruptCommit{fmt.Sprintf("the catalog ratified it as %s of %d bytes, which holds %d", r.key, r.size, info.Size)}
			}
			r.info = storage.ObjectInfo{Key: commitKey(n), Size: r.size, ModTime: info.ModTime, ETag: info.ETag}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return v, nil
}

func commitKey(v int64) string { return fmt.Sprintf("%s%020d.json", logDir, v) }

// logVersions parses a log key: the version it starts with and, for a
// compaction (x.y.compacted.json), its last one; ok is false for keys
// that are not versioned log files.
func logVersions(key string) (first, last int64, ok bool) {
	name, found := strings.CutPrefix(key, logDir)
	if !found || len(name) < 21 || name[20] != '.' {
		return 0, 0, false
	}
	first, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	last = first
	if strings.HasSuffix(name, ".compacted.json") && len(name) > 41 && name[41] == '.' {
		if l, err := strconv.ParseInt(name[21:41], 10, 64); err == nil {
			last = l
		}
	}
	return first, last, true
}

// ratifiedCommit is the catalog's commit of a commit key, if any.
func (c *catalogLog) ratifiedCommit(key string) (int64, *ratified) {
	first, _, ok := logVersions(key)
	if !ok || key != commitKey(first) {
		return -1, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return first, c.view.commits[first]
}

func (c *catalogLog) refused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// Location is uc://catalog.schema.table.
func (c *catalogLog) Location() string { return c.loc }

// CatalogLog: log replay may read the catalogManaged feature from here.
func (c *catalogLog) CatalogLog() (bool, string) { return true, "" }

// List lists the log as the catalog has it (asking the catalog first);
// other prefixes pass through.
func (c *catalogLog) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	if !strings.HasPrefix(prefix, logDir+"0") && !strings.HasPrefix(logDir+"0", prefix) {
		if err := c.refused(); err != nil {
			return nil, err
		}
		return c.Storage.List(ctx, prefix, startAfter)
	}
	if err := c.reload(ctx); err != nil {
		return nil, err
	}
	infos, err := c.Storage.List(ctx, prefix, startAfter)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.view
	out := infos[:0]
	for _, oi := range infos {
		first, last, ok := logVersions(oi.Key)
		switch {
		case !ok:
		case last > v.latest:
			continue // the catalog has not ratified it: ignored
		case v.commits[first] != nil && oi.Key == commitKey(first):
			c.published[first] = oi
			continue // read from the catalog's commit
		}
		out = append(out, oi)
	}
	for n, r := range v.commits {
		key := commitKey(n)
		if strings.HasPrefix(key, prefix) && key > startAfter {
			info := r.info
			info.Key, info.Size = key, r.size
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b storage.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// reload asks the catalog again, within LoadTimeout. An answer the table
// cannot follow (inconsistent, going back) keeps the last one and fails
// the listing; a refusal (the table dropped, access revoked) fails every
// request until the catalog answers again.
func (c *catalogLog) reload(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, LoadTimeout)
	defer cancel()
	a, err := c.load(lctx)
	if err != nil {
		msg := c.describe(err)
		if ae := (*APIError)(nil); errors.As(err, &ae) && ae.Status == 404 {
			msg = "the catalog no longer has the table (dropped?): " + err.Error()
		}
		e := &catalogError{msg: c.loc + ": " + msg, err: err}
		if IsDenied(err) {
			c.mu.Lock()
			c.gone = e
			c.mu.Unlock()
		}
		return e
	}
	v, err := c.accept(ctx, a)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.view, c.gone = v, nil
	c.mu.Unlock()
	return nil
}

// Stat stats the catalog's commit for a ratified version.
func (c *catalogLog) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if err := c.refused(); err != nil {
		return storage.ObjectInfo{}, err
	}
	if _, r := c.ratifiedCommit(key); r != nil {
		if r.bad != nil {
			return storage.ObjectInfo{}, r.bad
		}
		return r.info, nil
	}
	return c.Storage.Stat(ctx, key)
}

// ReadAt reads a ratified version from the catalog's commit, checking
// that a published copy holds the same bytes.
func (c *catalogLog) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := c.refused(); err != nil {
		return 0, err
	}
	n, r := c.ratifiedCommit(key)
	if r == nil {
		return c.Storage.ReadAt(ctx, key, p, off)
	}
	if r.bad != nil {
		return 0, r.bad
	}
	got, err := c.Storage.ReadAt(ctx, r.key, p, off)
	if errors.Is(err, storage.ErrNotExist) && !storage.IsTableWide(err) {
		return 0, &corruptCommit{fmt.Sprintf("the catalog ratified it as %s, which does not exist", r.key)}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return got, err
	}
	c.mu.Lock()
	pub, ok := c.published[n]
	c.mu.Unlock()
	if !ok {
		return got, err
	}
	differs := &corruptCommit{fmt.Sprintf("differs from the catalog's ratified commit %s (a published commit must be its copy; the catalog's is authoritative: the table is corrupt)", r.key)}
	if pub.Size != r.size {
		return 0, differs
	}
	q := make([]byte, got)
	m, perr := c.Storage.ReadAt(ctx, key, q, off)
	if perr != nil && !errors.Is(perr, io.EOF) && !errors.Is(perr, storage.ErrNotExist) {
		return 0, perr
	}
	// A published copy deleted since the listing is no contradiction.
	if !errors.Is(perr, storage.ErrNotExist) && (m != got || !bytes.Equal(p[:got], q)) {
		return 0, differs
	}
	return got, err
}

// ReadRanges keeps the backend's coalescing reads for data files.
func (c *catalogLog) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	if err := c.refused(); err != nil {
		return nil, err
	}
	if _, r := c.ratifiedCommit(key); r != nil {
		out := make([][]byte, len(ranges))
		for i, rg := range ranges {
			b, err := storage.ReadRange(ctx, c, key, rg.Off, rg.Len)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	return storage.ReadRanges(ctx, c.Storage, key, ranges)
}

// Put is refused: deltafs reads.
func (c *catalogLog) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	return fmt.Errorf("%s: %s: catalog-managed tables are read only here (commits go through the catalog)", c.loc, key)
}

// Close closes the storage.
func (c *catalogLog) Close() error {
	if cl, ok := c.Storage.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// Unwrap is the storage location's backend.
func (c *catalogLog) Unwrap() storage.Storage { return c.Storage }
