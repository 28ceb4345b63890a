package sharing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/deltafs/deltafs/storage"
)

// Store is a shared table as a read-only table directory: a synthesised
// _delta_log and the data files, read through pre-signed URLs.
type Store struct {
	loc    string
	c      *Client
	hc     *http.Client
	log    *slog.Logger
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	latest  int64                // newest version built; -1: none yet
	refused string               // the server's refusal of history; "": history is shared
	last    *version             // version latest, for the next difference
	lastTS  int64                // its timestamp
	objects map[string]logObject // _delta_log keys
	urls    map[string]*urlState // data and deletion vector files
	renewed map[int64]time.Time  // by version queried for fresh URLs (-1: current): when last
	flight  singleflight.Group
}

// logObject is one synthesised _delta_log file, or a commit the share
// refuses (err).
type logObject struct {
	data []byte
	mod  time.Time
	err  error
}

// urlState is the URL that reads a file now, and the version to query for
// a fresh one (-1: the current version).
type urlState struct {
	signedURL
	fetched time.Time
	from    int64
}

// ErrHistory marks reads of versions the share does not serve.
var ErrHistory = errors.New("the share does not allow history")

// historyError is the refusal of an older version, with the server's words.
type historyError struct{ server string }

func (e *historyError) Error() string {
	return "the share does not allow history: only the latest version can be read (the server: " + e.server + ")"
}
func (e *historyError) Unwrap() error { return ErrHistory }

// parallelQueries bounds the version queries in flight.
const parallelQueries = 4

// newStore opens the table: the current version, and every version the
// share serves.
func newStore(ctx context.Context, loc string, c *Client, hc *http.Client, log *slog.Logger) (*Store, error) {
	s := &Store{loc: loc, c: c, hc: hc, log: log, closed: make(chan struct{}), latest: -1,
		objects: map[string]logObject{}, urls: map[string]*urlState{}, renewed: map[int64]time.Time{}}
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Location is the location as given (the profile's path and the table's
// name: no secret).
func (s *Store) Location() string { return s.loc }

// Close ends every later call.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

var errClosed = errors.New("the table is closed")

// sync builds the versions the server has and deltafs has not yet seen.
func (s *Store) sync(ctx context.Context) error {
	v, err := s.c.Version(ctx)
	if err != nil {
		return fmt.Errorf("querying the table version: %w", err)
	}
	s.mu.Lock()
	latest, refused := s.latest, s.refused
	s.mu.Unlock()
	if v == latest {
		return nil
	}
	if v < latest {
		return fmt.Errorf("the share's version went back from %d to %d", latest, v)
	}
	if latest >= 0 && refused != "" {
		return s.buildLatestOnly(ctx, refused)
	}
	if latest < 0 {
		// Does the share serve versions? Ask for the current one by
		// number: a refusal (4xx) while the table exists is the share's
		// history setting.
		r, err := s.c.Query(ctx, &v)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 401 {
			msg := ae.Message
			if msg == "" {
				msg = ae.Error()
			}
			s.log.Info("delta sharing: the share does not allow history; serving the latest version only", "table", s.loc, "version", v)
			return s.buildLatestOnly(ctx, msg)
		}
		if err != nil {
			return fmt.Errorf("querying version %d: %w", v, err)
		}
		return s.buildHistory(ctx, v, r)
	}
	return s.buildHistory(ctx, v, nil)
}

// buildHistory queries versions latest+1..v (all of them when nothing is
// built yet; top, when given, is version v's answer) and writes their
// commits. When the first versions cannot be queried (the share's history
// starts later, or the log was cleaned up), the first version served is
// written as a checkpoint.
func (s *Store) buildHistory(ctx context.Context, v int64, top *Response) error {
	s.mu.Lock()
	from, latest := s.latest+1, s.latest
	s.mu.Unlock()
	// One query a version: a server that claims a huge version (up to
	// 2^63-1) must not make the open query it without end.
	if limit := s.c.maxVersions; v-from >= limit {
		if latest >= 0 {
			return fmt.Errorf("the share's version went from %d to %d: more than %d new versions at once", latest, v, limit)
		}
		from = v - limit + 1
		s.log.Info("delta sharing: the share has more versions than deltafs reads at open; serving the latest ones, the first as a checkpoint", "table", s.loc, "version", v, "first_version", from)
	}
	n := v - from + 1
	answers := make([]*version, n)
	errs := make([]error, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelQueries)
	for i := int64(0); i < n; i++ {
		g.Go(func() error {
			ver := from + i
			r := top
			if ver != v || r == nil {
				var err error
				if r, err = s.c.Query(gctx, &ver); err != nil {
					errs[i] = fmt.Errorf("querying version %d: %w", ver, err)
					var ae *APIError
					if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 401 {
						return nil // a version the share does not serve
					}
					return errs[i]
				}
			}
			pv, err := parseVersion(r)
			if err == nil && r.Version != ver {
				err = fmt.Errorf("asked for version %d, the server answered version %d", ver, r.Version)
			}
			if err != nil {
				errs[i] = fmt.Errorf("version %d: %w", ver, err)
				return errs[i]
			}
			pv.v = ver
			answers[i] = pv
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// The versions served run without a gap up to v.
	start := n - 1
	for start > 0 && answers[start-1] != nil {
		start--
	}
	if answers[n-1] == nil {
		return errs[n-1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.last
	if start > 0 {
		if prev != nil {
			// A version the share served before is refused now.
			return errs[start-1]
		}
		s.log.Info("delta sharing: the share's history starts later", "table", s.loc, "first_version", from+start, "cause", errs[start-1])
	}
	fillTimestamps(answers[start:], s.lastTS)
	for _, a := range answers[start:] {
		ict := inCommitTimestamps(a.metadata)
		mod := time.UnixMilli(a.timestamp)
		if prev == nil {
			if a.v > 0 {
				s.objects[checkpointKey(a.v)] = logObject{data: checkpoint(a), mod: mod}
			}
			s.objects[commitKey(a.v)] = logObject{data: commit(nil, a, a.timestamp, ict), mod: mod}
		} else {
			s.objects[commitKey(a.v)] = logObject{data: commit(prev, a, a.timestamp, ict), mod: mod}
		}
		s.remember(a, a.v)
		prev = a
	}
	s.last, s.latest, s.lastTS = prev, v, prev.timestamp
	return nil
}

// buildLatestOnly serves the current version alone, as a checkpoint; the
// older versions are listed and fail, quoting the server's refusal.
func (s *Store) buildLatestOnly(ctx context.Context, refused string) error {
	r, err := s.c.Query(ctx, nil)
	if err != nil {
		return fmt.Errorf("querying the current version: %w", err)
	}
	a, err := parseVersion(r)
	if err != nil {
		return fmt.Errorf("version %d: %w", r.Version, err)
	}
	if r.Version < 0 {
		return errors.New("the server's answer has no Delta-Table-Version")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Version <= s.latest {
		return nil
	}
	// An unversioned query gives no timestamp: the version is as old as
	// the moment deltafs first saw it.
	ts := max(time.Now().UnixMilli(), s.lastTS)
	if a.timestamp >= 0 {
		ts = a.timestamp
	}
	a.timestamp = ts
	mod := time.UnixMilli(ts)
	for k := range s.objects {
		delete(s.objects, k)
	}
	herr := &historyError{server: refused}
	for v := int64(0); v < r.Version; v++ {
		s.objects[commitKey(v)] = logObject{data: []byte{'\n'}, mod: mod, err: herr}
	}
	s.objects[checkpointKey(r.Version)] = logObject{data: checkpoint(a), mod: mod}
	s.objects[commitKey(r.Version)] = logObject{data: commit(nil, a, ts, inCommitTimestamps(a.metadata)), mod: mod}
	s.remember(a, -1)
	s.last, s.latest, s.lastTS, s.refused = a, r.Version, ts, refused
	return nil
}

// remember keeps the URLs of a version's files; from is the version to
// query again for fresh ones.
func (s *Store) remember(a *version, from int64) {
	now := time.Now()
	for _, f := range a.files {
		for _, u := range f.urls {
			s.urls[u.key] = &urlState{signedURL: u, fetched: now, from: from}
		}
	}
}

// fillTimestamps gives versions whose answer had no file (so no
// timestamp) the timestamp of the version before (after, for the first),
// so that times never go back.
func fillTimestamps(vs []*version, before int64) {
	next := int64(-1)
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].timestamp >= 0 {
			next = vs[i].timestamp
		}
	}
	prev := before
	if prev <= 0 {
		prev = next
	}
	for _, v := range vs {
		if v.timestamp < 0 {
			v.timestamp = max(prev, 0)
		}
		prev = v.timestamp
	}
}

func inCommitTimestamps(meta []byte) bool {
	return strings.Contains(string(meta), `"delta.enableInCommitTimestamps":"true"`)
}

func commitKey(v int64) string { return fmt.Sprintf("_delta_log/%020d.json", v) }

func checkpointKey(v int64) string {
	return fmt.Sprintf("_delta_log/%020d.checkpoint.deltafs-shared-snapshot.json", v)
}

// List lists the synthesised log (asking the server for new versions
// first) or the data files known.
func (s *Store) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	if s.isClosed() {
		return nil, errClosed
	}
	if strings.HasPrefix("_delta_log/", prefix) || strings.HasPrefix(prefix, "_delta_log/") {
		if err := s.sync(ctx); err != nil {
			return nil, &tableError{fmt.Errorf("%s: %w", s.loc, err)}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.ObjectInfo
	for k, o := range s.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, storage.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.mod})
		}
	}
	for k, u := range s.urls {
		if strings.HasPrefix(k, prefix) && k > startAfter && u.size >= 0 {
			out = append(out, storage.ObjectInfo{Key: k, Size: u.size})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// tableError marks a failure of the table as a whole (storage.IsTableWide).
type tableError struct{ error }

func (e *tableError) TableWide() bool { return true }
func (e *tableError) Unwrap() error   { return e.error }

// Stat describes a log file or a data file.
func (s *Store) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if s.isClosed() {
		return storage.ObjectInfo{}, errClosed
	}
	s.mu.Lock()
	o, isLog := s.objects[key]
	u := s.urls[key]
	s.mu.Unlock()
	if isLog {
		return storage.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.mod}, nil
	}
	if u == nil {
		return storage.ObjectInfo{}, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	size := u.size
	if size < 0 {
		var err error
		if size, err = s.probeSize(ctx, key); err != nil {
			return storage.ObjectInfo{}, err
		}
	}
	return storage.ObjectInfo{Key: key, Size: size}, nil
}

// Put refuses: a share is read-only.
func (s *Store) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	return fmt.Errorf("%s: a shared table is read-only", key)
}
