package fs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// Options configure the tree.
type Options struct {
	// Samples is the sample layer over the table.
	Samples *sample.Samples
	// Refresh is how often the log is polled for new versions, and the
	// kernel timeout of what changes with it (the root, version/, latest,
	// at/). 0 means 10s.
	Refresh time.Duration
	// Immutable is the kernel entry and attribute timeout of everything
	// under version/N, which never changes. 0 means 24h.
	Immutable time.Duration
	// Stats renders MOUNT/.deltafs/stats (JSON); nil: the sample layer's
	// counters only.
	Stats func() any
	// Logger gets errors and notices; nil: slog.Default().
	Logger *slog.Logger
	// Extents, when set, adds the extent manifest to every shard directory
	// (see Extents); nil: none.
	Extents Extents
	// Xattrs serves the extent attribute on sample files (needs Extents).
	// Off, the mount disables xattrs altogether, so that `ls -l` costs no
	// getxattr round trips.
	Xattrs bool
}

func (o *Options) fill() {
	if o.Refresh <= 0 {
		o.Refresh = 10 * time.Second
	}
	if o.Immutable <= 0 {
		o.Immutable = 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Root is the mount's root directory: version/, latest, at/, .deltafs/.
type Root struct {
	gofs.Inode
	opts    Options
	log     *slog.Logger
	started time.Time

	versionsDir *gofs.Inode // set in OnAdd
	latestNode  *gofs.Inode

	mu       sync.RWMutex
	versions []snapshot.VersionInfo // guarded by mu; oldest first
	byNum    map[int64]int          // guarded by mu; version -> index in versions
	latest   int64                  // guarded by mu; -1 before the first listing
	pollErr  error                  // guarded by mu; the last poll's error

	skipMu  sync.Mutex
	skipped map[int64]string // guarded by skipMu; versions latest did not move to, with the cause logged

	readLatency cache.Histogram // FUSE reads of sample files, as served
	usage       usageCache      // the latest version's size, for Statfs
}

// ReadLatency times FUSE reads of sample files (for metrics).
func (r *Root) ReadLatency() *cache.Histogram { return &r.readLatency }

var _ = (gofs.NodeOnAdder)((*Root)(nil))   // builds the static children
var _ = (gofs.NodeGetattrer)((*Root)(nil)) // short timeouts: the root changes

// NewRoot lists the table's versions once (failing when it cannot) and
// returns the root node to mount.
func NewRoot(ctx context.Context, opts Options) (*Root, error) {
	opts.fill()
	r := &Root{opts: opts, log: opts.Logger, started: time.Now(), latest: -1}
	if err := r.refresh(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// MountOptions are the go-fuse options deltafs mounts with: read-only, no
// xattrs unless Options.Xattrs, the refresh interval as the default
// timeouts (the immutable parts set long ones themselves), more background
// requests for read-ahead.
func (r *Root) MountOptions(fsName string, allowOther, debug bool) *gofs.Options {
	d := r.opts.Refresh
	return &gofs.Options{
		EntryTimeout:    &d,
		AttrTimeout:     &d,
		NegativeTimeout: &d,
		MountOptions: fuse.MountOptions{
			FsName:        fsName,
			Name:          "deltafs",
			Options:       []string{"ro"},
			DisableXAttrs: !r.xattrs(),
			// Samples come from memory: splicing them through a pipe costs
			// more than one writev (measured: 16% of a cold pass's CPU).
			DisableSplice: true,
			MaxBackground: 64,
			MaxWrite:      1 << 20,
			AllowOther:    allowOther,
			// The kernel caches link targets; latest's is invalidated
			// (NotifyContent) when it moves, at/ links never change.
			EnableSymlinkCaching: true,
			Debug:                debug,
		},
	}
}

// OnAdd builds the static part of the tree.
func (r *Root) OnAdd(ctx context.Context) {
	r.versionsDir = r.NewPersistentInode(ctx, &versionsDir{root: r}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindVersions, 0, 0)})
	r.AddChild("version", r.versionsDir, false)
	r.latestNode = r.NewPersistentInode(ctx, &latestLink{root: r}, gofs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino(kindLatest, 0, 0)})
	r.AddChild("latest", r.latestNode, false)
	r.AddChild("at", r.NewPersistentInode(ctx, &atDir{root: r}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindAtDir, 0, 0)}), false)
	meta := r.NewPersistentInode(ctx, &metaDir{}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindMetaDir, 0, 0)})
	r.AddChild(".deltafs", meta, false)
	meta.AddChild("stats", meta.NewPersistentInode(ctx, &statsFile{root: r}, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindStats, 0, 0)}), false)
}

// Getattr implements gofs.NodeGetattrer.
func (r *Root) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.dirAttr(&out.Attr, r.latestTime())
	out.SetTimeout(r.opts.Refresh)
	return 0
}

func (r *Root) dirAttr(a *fuse.Attr, mtime time.Time) {
	a.Mode = syscall.S_IFDIR | 0o555
	a.Nlink = 2
	setTime(a, mtime)
}

func setTime(a *fuse.Attr, t time.Time) {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	a.SetTimes(&t, &t, &t)
}

// Run polls the log every Refresh until ctx ends, so new versions appear
// and latest moves without a remount. Call it after mounting. A failed
// poll keeps the last list; it is logged once (again when the cause
// changes), and its recovery once.
func (r *Root) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Refresh)
	defer t.Stop()
	failing := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(r.opts.Refresh*5, 30*time.Second))
		err := r.refresh(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && err.Error() != failing:
			failing = err.Error()
			r.log.Warn("listing the table's versions failed; keeping the last list", "err", err)
		case err == nil && failing != "":
			failing = ""
			r.log.Info("listing the table's versions works again")
		}
	}
}

// refresh lists the versions and moves latest to the newest version that
// can be read (see pickLatest); when latest moves or versions appear, it
// tells the kernel.
func (r *Root) refresh(ctx context.Context) error {
	vs, err := r.opts.Samples.Versions(ctx)
	if err != nil {
		r.mu.Lock()
		r.pollErr = err
		r.mu.Unlock()
		return err
	}
	r.mu.RLock()
	old := r.latest
	r.mu.RUnlock()
	latest := r.pickLatest(ctx, vs, old)
	if latest < 0 {
		err := errors.New("no version of the table can be read")
		r.mu.Lock()
		r.pollErr = err
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	r.pollErr = nil
	oldVersions := r.byNum
	r.versions = vs
	r.byNum = make(map[int64]int, len(vs))
	for i, v := range vs {
		r.byNum[v.Version] = i
	}
	r.latest = latest
	moved := r.latest != old
	r.mu.Unlock()
	var added []string
	for _, v := range vs {
		if _, ok := oldVersions[v.Version]; !ok {
			added = append(added, strconv.FormatInt(v.Version, 10))
		}
	}
	if moved && old >= 0 {
		r.log.Info("new version", "latest", latest, "was", old)
	}
	if r.latestNode != nil && (moved || len(added) > 0) {
		// Drop the kernel's cached dentry and attributes of latest and of
		// the new version names (negative entries).
		go func() {
			if moved {
				r.latestNode.NotifyContent(0, 0)
				r.NotifyEntry("latest")
			}
			for _, name := range added {
				r.versionsDir.NotifyEntry(name)
			}
		}()
	}
	return nil
}

// pickLatest is where latest points after a poll: the newest listed
// version newer than old whose snapshot builds (protocol accepted, log
// intact), else old. A newer version that cannot be read is logged once
// per cause, with the table, the version and the cause, and tried again
// at every poll (a partial write may complete, a later commit may change
// the protocol back). Versions are tried newest first; a failure naming a
// log file of version c skips the versions from c up, which all need that
// file (snapshot.Error.FileVersion).
func (r *Root) pickLatest(ctx context.Context, vs []snapshot.VersionInfo, old int64) int64 {
	for i := len(vs) - 1; i >= 0 && vs[i].Version > old; i-- {
		v := vs[i].Version
		_, err := r.opts.Samples.Version(ctx, v)
		if err == nil {
			r.skippedUpTo(v)
			return v
		}
		if ctx.Err() != nil {
			return old
		}
		r.warnSkipped(v, err)
		var se *snapshot.Error
		if errors.As(err, &se) {
			if c, ok := se.FileVersion(); ok && c < v {
				for i > 0 && vs[i-1].Version >= c {
					i--
				}
			}
		}
	}
	return old
}

// warnSkipped logs, once per version and cause, that latest does not move
// to version v.
func (r *Root) warnSkipped(v int64, err error) {
	table, cause := "", err.Error()
	var se *snapshot.Error
	if errors.As(err, &se) {
		table, cause = se.Table, se.Err.Error()
		if se.File != "" {
			cause = se.File + ": " + cause
		}
	}
	r.skipMu.Lock()
	defer r.skipMu.Unlock()
	if r.skipped == nil {
		r.skipped = map[int64]string{}
	}
	if r.skipped[v] == cause {
		return
	}
	r.skipped[v] = cause
	r.log.Warn("latest does not move to a version that cannot be read", "table", table, "version", v, "cause", cause)
}

// skippedUpTo forgets the skipped versions up to v (latest reached v).
func (r *Root) skippedUpTo(v int64) {
	r.skipMu.Lock()
	defer r.skipMu.Unlock()
	for u := range r.skipped {
		if u <= v {
			delete(r.skipped, u)
		}
	}
}

// version looks a version up in the last listing.
func (r *Root) version(v int64) (snapshot.VersionInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.byNum[v]
	if !ok {
		return snapshot.VersionInfo{}, false
	}
	return r.versions[i], true
}

func (r *Root) latestTime() time.Time {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.byNum[r.latest]; ok {
		return r.versions[i].Timestamp
	}
	return r.started
}

// latestLink is MOUNT/latest -> version/N.
type latestLink struct {
	gofs.Inode
	root *Root
}

var _ = (gofs.NodeReadlinker)((*latestLink)(nil))
var _ = (gofs.NodeGetattrer)((*latestLink)(nil))

func (l *latestLink) target() ([]byte, bool) {
	l.root.mu.RLock()
	v := l.root.latest
	l.root.mu.RUnlock()
	if v < 0 {
		return nil, false
	}
	return []byte("version/" + strconv.FormatInt(v, 10)), true
}

// Readlink implements gofs.NodeReadlinker.
func (l *latestLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, ok := l.target()
	if !ok {
		return nil, syscall.ENOENT
	}
	return t, 0
}

// Getattr implements gofs.NodeGetattrer.
func (l *latestLink) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	t, _ := l.target()
	out.Mode = syscall.S_IFLNK | 0o777
	out.Size = uint64(len(t))
	setTime(&out.Attr, l.root.latestTime())
	out.SetTimeout(l.root.opts.Refresh)
	return 0
}

// atDir is MOUNT/at: lookup-only links to the version current at a time.
type atDir struct {
	gofs.Inode
	root *Root
}

var _ = (gofs.NodeLookuper)((*atDir)(nil))
var _ = (gofs.NodeReaddirer)((*atDir)(nil)) // empty: names are computed
var _ = (gofs.NodeGetattrer)((*atDir)(nil))

// Lookup implements gofs.NodeLookuper.
func (d *atDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ts, err := snapshot.ParseTime(name)
	if err != nil {
		return nil, syscall.ENOENT
	}
	v, err := d.root.opts.Samples.VersionAt(ctx, ts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, syscall.EINTR
		}
		d.root.log.Debug("at: no version", "time", name, "err", err)
		return nil, syscall.ENOENT
	}
	info, _ := d.root.version(v)
	link := &atLink{target: []byte("../version/" + strconv.FormatInt(v, 10)), mtime: info.Timestamp, timeout: d.root.opts.Refresh}
	link.attr(&out.Attr)
	out.SetEntryTimeout(d.root.opts.Refresh)
	out.SetAttrTimeout(d.root.opts.Refresh)
	return d.NewInode(ctx, link, gofs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino(kindAt, v, 0)}), 0
}

// Readdir implements gofs.NodeReaddirer.
func (d *atDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return gofs.NewListDirStream(nil), 0
}

// Getattr implements gofs.NodeGetattrer.
func (d *atDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.root.dirAttr(&out.Attr, d.root.started)
	out.SetTimeout(d.root.opts.Refresh)
	return 0
}

// atLink is at/<time> -> ../version/N.
type atLink struct {
	gofs.Inode
	target  []byte
	mtime   time.Time
	timeout time.Duration
}

var _ = (gofs.NodeReadlinker)((*atLink)(nil))
var _ = (gofs.NodeGetattrer)((*atLink)(nil))

func (l *atLink) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFLNK | 0o777
	a.Size = uint64(len(l.target))
	setTime(a, l.mtime)
}

// Readlink implements gofs.NodeReadlinker.
func (l *atLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) { return l.target, 0 }

// Getattr implements gofs.NodeGetattrer.
func (l *atLink) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	l.attr(&out.Attr)
	out.SetTimeout(l.timeout)
	return 0
}

// metaDir is MOUNT/.deltafs. Its Lookup gives the stats file an attribute
// timeout of a nanosecond (go-fuse would put the mount's default on a zero
// one): the kernel then asks for attributes at every stat, sees the new
// mtime and drops its cached pages, so that each read renders the counters
// anew. (Within one kernel tick the kernel may still skip the request.)
type metaDir struct{ gofs.Inode }

var _ = (gofs.NodeLookuper)((*metaDir)(nil))
var _ = (gofs.NodeGetattrer)((*metaDir)(nil))

// Lookup implements gofs.NodeLookuper.
func (d *metaDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	child := d.GetChild(name)
	if child == nil {
		return nil, syscall.ENOENT
	}
	if ga, ok := child.Operations().(gofs.NodeGetattrer); ok {
		var a fuse.AttrOut
		if errno := ga.Getattr(ctx, nil, &a); errno != 0 {
			return nil, errno
		}
		out.Attr = a.Attr
		out.SetAttrTimeout(a.Timeout())
	}
	return child, 0
}

// Getattr implements gofs.NodeGetattrer: read-only like every directory,
// with the mount's start as its time.
func (d *metaDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r := d.Root().Operations().(*Root)
	r.dirAttr(&out.Attr, r.started)
	out.SetTimeout(r.opts.Refresh)
	return 0
}

// statsFile is MOUNT/.deltafs/stats: counters as JSON, rendered afresh by
// every read from offset 0 and by every GETATTR. Its attribute timeout is
// a nanosecond (see metaDir), so a stat a kernel tick (1-10 ms) after the
// last sees a new mtime and the kernel drops its cached pages; a read
// within the same tick may be served the previous counters from the page
// cache. Because the kernel may read with a size it learnt earlier, the
// file reports a size with room to spare (twice the rendering, in 4 KiB
// units) and pads the JSON to it with spaces (still valid JSON).
type statsFile struct {
	gofs.Inode
	root *Root

	mu   sync.Mutex
	data []byte // guarded by mu; the rendering being read
	size int64  // guarded by mu; the size last reported
}

var _ = (gofs.NodeGetattrer)((*statsFile)(nil))
var _ = (gofs.NodeOpener)((*statsFile)(nil))
var _ = (gofs.NodeReader)((*statsFile)(nil))

func (f *statsFile) render() []byte {
	var v any
	if f.root.opts.Stats != nil {
		v = f.root.opts.Stats()
	} else {
		v = f.root.DefaultStats()
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b = []byte(strconv.Quote(err.Error()))
	}
	return append(b, '\n')
}

// Getattr implements gofs.NodeGetattrer.
func (f *statsFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	data := f.render()
	f.mu.Lock()
	if int64(len(data)) > f.size || f.size > 4*int64(len(data))+8192 {
		f.size = (2*int64(len(data))/4096 + 1) * 4096
	}
	f.data, out.Size = data, uint64(f.size)
	f.mu.Unlock()
	out.Mode = syscall.S_IFREG | 0o444
	setTime(&out.Attr, time.Now())
	out.SetTimeout(time.Nanosecond) // not 0: go-fuse would put its default there
	return 0
}

// Open implements gofs.NodeOpener (see sampleFile.Open).
func (f *statsFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EROFS
	}
	// No open state: every read from offset 0 renders afresh (Read), and
	// ENOSYS is what sample files answer too (zero-message open).
	return nil, 0, syscall.ENOSYS
}

// Read implements gofs.NodeReader.
func (f *statsFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var fresh []byte
	if off == 0 {
		fresh = f.render()
	}
	f.mu.Lock()
	if f.size == 0 {
		f.size = (2*int64(len(fresh))/4096 + 1) * 4096
	}
	if fresh != nil && int64(len(fresh)) <= f.size {
		f.data = fresh
	}
	data, size := f.data, f.size
	f.mu.Unlock()
	if off >= size {
		return fuse.ReadResultData(nil), 0
	}
	end := min(size, off+int64(len(dest)))
	return fuse.ReadResultData(f.pad(dest[:end-off], off, data, size)), 0
}

// pad fills out, the bytes [off, off+len(out)) of a file of size bytes, from
// data and then spaces, ending the file with a newline.
func (f *statsFile) pad(out []byte, off int64, data []byte, size int64) []byte {
	n := 0
	if off < int64(len(data)) {
		n = copy(out, data[off:])
	}
	for i := n; i < len(out); i++ {
		out[i] = ' '
	}
	if off+int64(len(out)) == size && len(out) > 0 && size > int64(len(data)) {
		out[len(out)-1] = '\n'
	}
	return out
}

// DefaultStats are the sample layer's counters and the version listing's
// state.
func (r *Root) DefaultStats() map[string]any {
	c := r.opts.Samples.Counters()
	r.mu.RLock()
	latest, n, pollErr := r.latest, len(r.versions), r.pollErr
	r.mu.RUnlock()
	out := map[string]any{
		"versions": map[string]any{"count": n, "latest": latest},
		"index": map[string]any{
			"files":            c.FilesIndexed.Load(),
			"files_from_cache": c.FilesFromCache.Load(),
			"samples":          c.SamplesIndexed.Load(),
			"bytes":            c.IndexBytes.Load(),
			"bytes_per_sample": perSample(c.IndexBytes.Load(), c.SamplesIndexed.Load()),
		},
		"reads": map[string]any{"samples": c.Reads.Load(), "errors": c.ReadErrors.Load(), "latency": r.readLatency.Latency()},
	}
	if pollErr != nil {
		out["versions"].(map[string]any)["error"] = pollErr.Error()
	}
	return out
}

func perSample(b, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}
