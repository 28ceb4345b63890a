package fusefs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	// KernelInodes bounds the inodes listings make the kernel keep: a
	// listing (READDIRPLUS) gives entries their attributes, so that a
	// first read of each file needs no LOOKUP, only while the kernel holds
	// fewer than this many of the mount's inodes; past it, entries go by
	// name only (the kernel creates no inode for them) and a first open
	// looks its file up. Each kernel inode costs about 1.1 KiB of kernel
	// memory. 0 means DefaultKernelInodes; negative: names only, always.
	KernelInodes int64
	// Stats renders MOUNT/.deltafs/stats (JSON); nil: DefaultStats.
	Stats func() any
	// Logger gets errors and notices; nil: slog.Default().
	Logger *slog.Logger
	// Extents, when set, adds the extent list to every shard directory
	// (see Extents); nil: none.
	Extents Extents
	// Xattrs serves the extent attribute on sample files (needs Extents).
	// Off, the mount disables xattrs altogether, so that `ls -l` costs no
	// getxattr round trips.
	Xattrs bool
	// Prefill is the budget, in bytes, of sample bytes pushed into the
	// kernel's page cache ahead of the reader after a listing (see
	// prefill.go); 0: none.
	Prefill int64
}

// DefaultKernelInodes is Options.KernelInodes' default: about 110 MiB of
// kernel memory, and every shard of up to 100,000 samples listed with
// attributes.
const DefaultKernelInodes = 100_000

func (o *Options) fill() {
	if o.Refresh <= 0 {
		o.Refresh = 10 * time.Second
	}
	if o.Immutable <= 0 {
		o.Immutable = 24 * time.Hour
	}
	if o.KernelInodes == 0 {
		o.KernelInodes = DefaultKernelInodes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Root is the mounted filesystem: a go-fuse raw filesystem answering every
// request from the node id it names (see ino.go) and the sample layer.
type Root struct {
	fuse.RawFileSystem // ENOSYS for what is not implemented (writes)

	opts    Options
	log     *slog.Logger
	started time.Time
	server  *fuse.Server // set by Init

	mu       sync.RWMutex
	versions []snapshot.VersionInfo // guarded by mu; oldest first
	byNum    map[int64]int          // guarded by mu; version -> index in versions
	latest   int64                  // guarded by mu; -1 before the first listing
	pollErr  error                  // guarded by mu; the last poll's error

	skipMu  sync.Mutex
	skipped map[int64]string // guarded by skipMu; versions latest did not move to, with the cause logged

	// kernelInodes counts the lookups the kernel holds on the mount's
	// nodes: +1 for each LOOKUP answered and each READDIRPLUS entry given
	// a node, -n for each FORGET. It decides whether listings give
	// attributes (Options.KernelInodes).
	// Under a Catalog, every table's root shares the catalog's.
	kernelInodes *atomic.Int64

	// ids, under a Catalog, maps the table's nodes into the mount's node
	// ids (catalog.go); nil: the node id is the node (ino.go).
	ids *tableIDs

	stats   statsFile
	extents sync.Map // node id -> *extentsFile, for shards whose _extents.tsv was looked up

	readLatency cache.Histogram // FUSE reads of sample files, as served
	usage       usageCache      // the latest version's size, for StatFs
	ctr         Counters

	ovl     atomic.Pointer[overlays] // set by StartOverlays
	prefill *prefiller               // nil: no prefill
}

// Counters count what the kernel asked.
type Counters struct {
	Lookups     atomic.Int64 // LOOKUP requests
	Listed      atomic.Int64 // directory entries sent
	ListedPlus  atomic.Int64 // of which with attributes (a kernel inode each)
	Ioctls      atomic.Int64 // IOCTL requests (CPython's isatty, per open)
	SampleReads atomic.Int64 // READ requests of sample files
}

// Counters are the requests the mount answered.
func (r *Root) Counters() *Counters { return &r.ctr }

// ReadLatency times FUSE reads of sample files (for metrics).
func (r *Root) ReadLatency() *cache.Histogram { return &r.readLatency }

// KernelInodes is the number of lookups the kernel holds on the mount.
func (r *Root) KernelInodes() int64 { return r.kernelInodes.Load() }

// NewRoot lists the table's versions once (failing when it cannot) and
// returns the filesystem to mount.
func NewRoot(ctx context.Context, opts Options) (*Root, error) {
	return newRoot(ctx, opts, nil, new(atomic.Int64))
}

// newRoot is NewRoot for a table at its own mount (ids nil) or under a
// Catalog.
func newRoot(ctx context.Context, opts Options, ids *tableIDs, inodes *atomic.Int64) (*Root, error) {
	opts.fill()
	r := &Root{RawFileSystem: fuse.NewDefaultRawFileSystem(), opts: opts, log: opts.Logger, started: time.Now(), latest: -1, ids: ids, kernelInodes: inodes}
	r.stats.root = r
	if opts.Prefill > 0 {
		r.prefill = newPrefiller(r, opts.Prefill)
	}
	if err := r.refresh(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// MountOptions are the go-fuse options deltafs mounts with: read-only, no
// xattrs unless Options.Xattrs, more background requests for read-ahead.
func (r *Root) MountOptions(fsName string, allowOther, debug bool) *fuse.MountOptions {
	return &fuse.MountOptions{
		FsName:        fsName,
		Name:          "deltafs",
		Options:       []string{"ro"},
		DisableXAttrs: !r.xattrs(),
		// Samples come from memory: splicing them through a pipe costs
		// more than one writev (a cold pass's CPU profile shows it; the
		// figure is in bench/RESULTS.md, "Go benchmarks").
		DisableSplice: true,
		MaxBackground: 64,
		MaxWrite:      1 << 20,
		// A sequential reader of a tar view gets 1 MiB reads ahead.
		MaxReadAhead: 1 << 20,
		AllowOther:   allowOther,
		// The kernel caches link targets; latest's is invalidated
		// (InodeNotify) when it moves, at/ links never change.
		EnableSymlinkCaching: true,
		Debug:                debug,
	}
}

// Init implements fuse.RawFileSystem: it keeps the server, for
// notifications.
func (r *Root) Init(s *fuse.Server) { r.server = s }

// String implements fuse.RawFileSystem.
func (r *Root) String() string { return "deltafs" }

// requestCtx is the context of a request: done when the kernel interrupts
// it.
func requestCtx(cancel <-chan struct{}, h *fuse.InHeader) context.Context {
	return &fuse.Context{Caller: h.Caller, Cancel: cancel}
}

// status turns an errno into a fuse.Status.
func status(e syscall.Errno) fuse.Status { return fuse.Status(e) }

func setTime(a *fuse.Attr, t time.Time) {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	a.SetTimes(&t, &t, &t)
}

func dirAttr(a *fuse.Attr, mtime time.Time) {
	a.Mode = syscall.S_IFDIR | 0o555
	a.Nlink = 2
	setTime(a, mtime)
}

func fileAttr(a *fuse.Attr, size int64, mtime time.Time) {
	a.Mode = syscall.S_IFREG | 0o444
	a.Size = uint64(size)
	a.Nlink = 1
	a.Blksize = 4096
	a.Blocks = (a.Size + 511) / 512
	setTime(a, mtime)
}

func linkAttr(a *fuse.Attr, target []byte, mtime time.Time) {
	a.Mode = syscall.S_IFLNK | 0o777
	a.Size = uint64(len(target))
	setTime(a, mtime)
}
