package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// A Catalog is a mount of many tables, found by name in a catalog's
// listings (Unity Catalog's schemas and tables, Delta Sharing's shares,
// schemas and tables):
//
//	MOUNT/
//	  SCHEMA/              (Levels 2: uc://CATALOG)
//	    TABLE/             a table's tree, as a table mount shows it
//	      latest -> version/N
//	      version/N/shard/K/...
//	      at/
//
// The catalog levels are directories listed from the catalog (List) when
// first looked at, and listed again every Refresh while mounted: tables
// that appear show up, tables that disappear answer ENOENT and their
// resources (the table's poll, credentials, caches) are released. A table
// is opened (Open: the code that opens a table by name, with its own
// credentials and their renewal) only at the first LOOKUP, OPENDIR or
// READDIR inside its directory, so listing a schema of thousands of tables
// reads no table's log. A table that cannot be opened (no permission, an
// unsupported feature) answers EIO, with one log line naming it and the
// cause, and is tried again after the next listing; the other tables keep
// serving.
//
// Node ids. A table's nodes are its Root's (ino.go) with the version
// replaced by a slot: bit 63 set, kind in bits 58-62, slot in bits 32-57,
// item in bits 0-31. A slot stands for one (table, version) pair and is
// given out the first time the pair is named, never reused while mounted;
// a table that is dropped and comes back is a new table with new slots,
// so nothing the kernel cached of the old one is served as the new one.
// The table's own directory is its root node (kind 0) in the slot of
// (table, version 0). Catalog directories (the mount, schemas, shares)
// have ids below 2^32 (the mount is FUSE's node 1). So ids stay a pure
// function of the path for the mount's life, nothing is kept per kernel
// node, and a request reaches the table's Root with the id it was given.
type Catalog struct {
	fuse.RawFileSystem // ENOSYS for what is not implemented (writes)

	opts    CatalogOptions
	log     *slog.Logger
	started time.Time
	server  *fuse.Server // set by Init
	runCtx  context.Context
	stop    context.CancelFunc

	kernelInodes atomic.Int64 // shared by every table's Root

	mu     sync.RWMutex
	dirs   []*catDir   // guarded by mu; by id-1 (dirs[0] is the mount)
	tables []*catTable // guarded by mu; by table number
	slots  []slotKey   // guarded by mu; by slot
	slotOf map[slotKey]uint32

	failMu sync.Mutex
	failed map[string]string // guarded by failMu; path -> cause logged (listings and opens)
}

// CatalogOptions configure a Catalog.
type CatalogOptions struct {
	// Table are the options of every table's tree (Samples is set by
	// Open; Stats is ignored: each table shows its DefaultStats).
	Table Options
	// Name names the catalog in log lines (e.g. uc://main).
	Name string
	// PathName, when set, names the directory or table at path in log
	// lines (PROFILE.share#share.schema.table); else Name and the names,
	// dot-separated.
	PathName func(path []string) string
	// Levels is the number of names from the mount to a table: 1 (a
	// schema's tables), 2 (schemas, then tables), 3 (shares, schemas,
	// tables).
	Levels int
	// List returns the names under path (len(path) < Levels): its
	// schemas, shares or tables. Names that are not a single path
	// component, and names listed more than once, are left out with a log
	// line.
	List func(ctx context.Context, path []string) ([]string, error)
	// Open opens the table at path (len(path) == Levels); closing the
	// Closer releases it.
	Open func(ctx context.Context, path []string) (*sample.Samples, io.Closer, error)
	// MaxEntries bounds a listing's names; 0: 100,000.
	MaxEntries int
}

// DefaultCatalogEntries is CatalogOptions.MaxEntries' default.
const DefaultCatalogEntries = 100_000

type slotKey struct {
	table   int
	version int64
}

// maxSlots bounds the (table, version) pairs a mount can name.
const maxSlots = 1 << 26

// catDir is a catalog directory: the mount, a schema or a share.
type catDir struct {
	id   uint64
	path []string

	mu       sync.Mutex
	listed   bool               // guarded by mu; names is a listing
	names    []string           // guarded by mu; sorted
	children map[string]catItem // guarded by mu
	mtime    time.Time          // guarded by mu; of the last listing
}

// catItem is a child of a catDir: a directory (dir >= 0) or a table.
type catItem struct {
	dir   int // index in Catalog.dirs, or -1
	table int // table number, or -1
}

// catTable is a table of the catalog, opened on first use.
type catTable struct {
	num  int
	path []string
	dir  uint64 // its directory's node id

	mu     sync.Mutex
	root   *Root     // guarded by mu; nil before the open or after the drop
	closer io.Closer // guarded by mu
	cancel context.CancelFunc
	err    error // guarded by mu; the last open's error, until the next listing
	gone   bool  // guarded by mu; no longer listed
}

// tableIDs is what a table's Root needs to map its ids (ino.go).
type tableIDs struct {
	cat   *Catalog
	table int
}

// NewCatalog lists the mount's level once (failing when it cannot) and
// returns the filesystem to mount.
func NewCatalog(ctx context.Context, opts CatalogOptions) (*Catalog, error) {
	if opts.Levels < 1 || opts.Levels > 3 || opts.List == nil || opts.Open == nil {
		return nil, errors.New("fusefs.NewCatalog: Levels 1 to 3, List and Open are required")
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultCatalogEntries
	}
	opts.Table.fill()
	runCtx, stop := context.WithCancel(context.Background())
	c := &Catalog{RawFileSystem: fuse.NewDefaultRawFileSystem(), opts: opts, log: opts.Table.Logger, started: time.Now(),
		runCtx: runCtx, stop: stop, slotOf: map[slotKey]uint32{}, failed: map[string]string{}}
	c.dirs = []*catDir{{id: fuse.FUSE_ROOT_ID}}
	if err := c.relist(ctx, c.dirs[0]); err != nil {
		stop()
		return nil, err
	}
	return c, nil
}

// MountOptions are the options of a table mount (Root.MountOptions).
func (c *Catalog) MountOptions(fsName string, allowOther, debug bool) *fuse.MountOptions {
	r := &Root{opts: c.opts.Table}
	return r.MountOptions(fsName, allowOther, debug)
}

// Init implements fuse.RawFileSystem.
func (c *Catalog) Init(s *fuse.Server) { c.server = s }

// String implements fuse.RawFileSystem.
func (c *Catalog) String() string { return "deltafs" }

// KernelInodes is the number of lookups the kernel holds on the mount.
func (c *Catalog) KernelInodes() int64 { return c.kernelInodes.Load() }

// Tables is the number of tables open now.
func (c *Catalog) Tables() int {
	c.mu.RLock()
	ts := c.tables
	c.mu.RUnlock()
	n := 0
	for _, t := range ts {
		t.mu.Lock()
		if t.root != nil {
			n++
		}
		t.mu.Unlock()
	}
	return n
}

// Close releases every open table.
func (c *Catalog) Close() error {
	c.stop()
	c.mu.RLock()
	ts := c.tables
	c.mu.RUnlock()
	var errs []error
	for _, t := range ts {
		if err := t.release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run lists again, every Refresh until ctx ends, the directories listed
// so far, so tables that appear show up and tables that disappear are
// released. A failed listing keeps the last one, logged once per cause.
func (c *Catalog) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.Table.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.RLock()
		dirs := c.dirs
		c.mu.RUnlock()
		for _, d := range dirs {
			d.mu.Lock()
			listed := d.listed
			d.mu.Unlock()
			if !listed || c.dirGone(d) {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, max(c.opts.Table.Refresh*5, 30*time.Second))
			_ = c.relist(lctx, d) // logged by relist
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// dirGone reports whether d's parent no longer lists it.
func (c *Catalog) dirGone(d *catDir) bool {
	parent := c.dirAt(0)
	for i, name := range d.path {
		parent.mu.Lock()
		it, ok := parent.children[name]
		parent.mu.Unlock()
		if !ok || it.dir < 0 {
			return true
		}
		if i == len(d.path)-1 {
			return c.dirAt(it.dir) != d
		}
		parent = c.dirAt(it.dir)
	}
	return false
}

func (c *Catalog) dirAt(i int) *catDir {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dirs[i]
}

func (c *Catalog) tableAt(i int) *catTable {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tables[i]
}

// pathName is path as log lines show it: PathName's, else the catalog's
// name and the names, dot-separated (CATALOG.SCHEMA.TABLE).
func (c *Catalog) pathName(path []string) string {
	if c.opts.PathName != nil {
		return c.opts.PathName(path)
	}
	return strings.Join(append([]string{c.opts.Name}, path...), ".")
}

// ValidName reports whether a catalog's name can be a directory name: a
// single path component (not empty, ".", "..", no '/' or NUL), valid
// UTF-8, at most 255 bytes.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= statfsNameMax &&
		!strings.ContainsAny(name, "/\x00") && utf8.ValidString(name)
}

// relist lists directory d and applies the listing: new names appear
// (their negative entries dropped), gone names are released and their
// entries dropped.
func (c *Catalog) relist(ctx context.Context, d *catDir) error {
	where := c.pathName(d.path)
	names, err := c.opts.List(ctx, d.path)
	if err == nil && len(names) > c.opts.MaxEntries {
		err = fmt.Errorf("the catalog lists %d names, more than %d", len(names), c.opts.MaxEntries)
	}
	if err != nil {
		if ctx.Err() == nil || c.runCtx.Err() == nil {
			c.failOnce(where, "listing the catalog failed; keeping the last listing", err)
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	c.recovered(where, "listing the catalog works again")
	// Names that cannot be a directory, or that name two entries, are
	// left out: serving either could be the wrong one.
	count := make(map[string]int, len(names))
	for _, n := range names {
		count[n]++
	}
	var bad []string
	keep := make([]string, 0, len(count))
	for n, k := range count {
		switch {
		case !ValidName(n):
			bad = append(bad, fmt.Sprintf("%q (not a single path component)", n))
		case k > 1:
			bad = append(bad, fmt.Sprintf("%q (listed %d times)", n, k))
		default:
			keep = append(keep, n)
		}
	}
	sort.Strings(keep)
	sort.Strings(bad)
	if len(bad) > 0 {
		first := bad[0]
		if len(first) > 300 {
			first = first[:300] + "..."
		}
		c.failOnce(where+" names", "the catalog lists names deltafs leaves out", fmt.Errorf("%d names, first %s", len(bad), first))
	}
	level := len(d.path) + 1
	d.mu.Lock()
	old := d.children
	children := make(map[string]catItem, len(keep))
	var added []string
	var dropped []catItem
	for _, n := range keep {
		if it, ok := old[n]; ok {
			children[n] = it
			continue
		}
		added = append(added, n)
	}
	kept := make(map[string]bool, len(keep))
	for _, n := range keep {
		kept[n] = true
	}
	for n, it := range old {
		if !kept[n] {
			dropped = append(dropped, it)
			added = append(added, n) // its entry is dropped too
		}
	}
	d.mu.Unlock()
	// New children get their ids outside d.mu (c.mu is taken).
	for _, n := range keep {
		if _, ok := children[n]; ok {
			continue
		}
		path := append(append([]string(nil), d.path...), n)
		if level < c.opts.Levels {
			children[n] = catItem{dir: c.newDir(path), table: -1}
		} else {
			it, err := c.newTable(path)
			if err != nil {
				c.failOnce(c.pathName(path), "table not served", err)
				continue
			}
			children[n] = it
		}
	}
	d.mu.Lock()
	d.listed, d.names, d.children, d.mtime = true, keep, children, time.Now()
	d.mu.Unlock()
	for _, it := range dropped {
		c.drop(it)
	}
	// A table that failed to open is tried again after a listing.
	for _, it := range children {
		if it.table >= 0 {
			t := c.tableAt(it.table)
			t.mu.Lock()
			t.err = nil
			t.mu.Unlock()
		}
	}
	if s := c.server; s != nil && len(added) > 0 {
		// Not from this goroutine: a request waiting on this listing
		// could deadlock with the notification.
		go func() {
			s.InodeNotify(d.id, 0, 0)
			for _, n := range added {
				s.EntryNotify(d.id, n)
			}
		}()
	}
	return nil
}

func (c *Catalog) newDir(path []string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs = append(c.dirs, &catDir{id: uint64(len(c.dirs) + 1), path: path})
	return len(c.dirs) - 1
}

func (c *Catalog) newTable(path []string) (catItem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	num := len(c.tables)
	slot, ok := c.slotLocked(slotKey{num, 0})
	if !ok {
		return catItem{}, errors.New("the mount has named too many tables and versions (2^26)")
	}
	c.tables = append(c.tables, &catTable{num: num, path: path, dir: 1<<63 | uint64(slot)<<32})
	return catItem{dir: -1, table: num}, nil
}

// drop releases a child no longer listed, and everything under it.
func (c *Catalog) drop(it catItem) {
	if it.table >= 0 {
		t := c.tableAt(it.table)
		t.mu.Lock()
		t.gone = true
		t.mu.Unlock()
		if err := t.release(); err != nil {
			c.log.Warn("closing a dropped table", "table", c.pathName(t.path), "err", err)
		}
		c.log.Info("table no longer listed; released", "table", c.pathName(t.path))
		return
	}
	d := c.dirAt(it.dir)
	d.mu.Lock()
	kids := d.children
	d.children, d.names, d.listed = nil, nil, false
	d.mu.Unlock()
	for _, k := range kids {
		c.drop(k)
	}
}

// release stops the table's poll and closes it.
func (t *catTable) release() error {
	t.mu.Lock()
	cancel, closer := t.cancel, t.closer
	t.root, t.closer, t.cancel = nil, nil, nil
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if closer != nil {
		return closer.Close()
	}
	return nil
}

// slotLocked returns the slot of (table, version), giving one out if
// needed; c.mu is held for writing.
func (c *Catalog) slotLocked(k slotKey) (uint32, bool) {
	if s, ok := c.slotOf[k]; ok {
		return s, true
	}
	if len(c.slots) >= maxSlots {
		return 0, false
	}
	s := uint32(len(c.slots))
	c.slots = append(c.slots, k)
	c.slotOf[k] = s
	return s, true
}

// tableIno is the mount's id of node (kind, version, item) of table t.
func (c *Catalog) tableIno(t int, kind nodeKind, version, item int64) (uint64, bool) {
	if version < 0 || version >= maxVersion || item < 0 || item >= maxItem {
		return 0, false
	}
	k := slotKey{t, version}
	c.mu.RLock()
	s, ok := c.slotOf[k]
	c.mu.RUnlock()
	if !ok {
		c.mu.Lock()
		s, ok = c.slotLocked(k)
		c.mu.Unlock()
		if !ok {
			c.log.Warn("node not served: the mount has named too many tables and versions (2^26)", "version", version)
			return 0, false
		}
	}
	return 1<<63 | uint64(kind)<<58 | uint64(s)<<32 | uint64(item), true
}

// tableNode decodes a table node's id: its table and its node.
func (c *Catalog) tableNode(id uint64) (int, node, bool) {
	if id>>63 == 0 {
		return 0, node{}, false
	}
	kind, s := nodeKind(id>>58&31), id>>32&(maxSlots-1)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s >= uint64(len(c.slots)) || kind >= numKinds {
		return 0, node{}, false
	}
	k := c.slots[s]
	return k.table, node{kind: kind, version: k.version, item: int64(id & (maxItem - 1))}, true
}

// target is what a request's node id names: a catalog directory (dir),
// or a table's node (t, with n its node in the table).
type target struct {
	dir *catDir
	t   *catTable
	n   node
}

func (c *Catalog) target(id uint64) (target, bool) {
	if id>>63 == 0 {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if id == 0 || id > uint64(len(c.dirs)) {
			return target{}, false
		}
		return target{dir: c.dirs[id-1]}, true
	}
	num, n, ok := c.tableNode(id)
	if !ok {
		return target{}, false
	}
	return target{t: c.tableAt(num), n: n}, true
}

// open returns table t's Root, opening it at first use. EIO when it
// cannot be opened (logged once per cause), ENOENT once it is no longer
// listed.
func (c *Catalog) open(ctx context.Context, t *catTable) (*Root, syscall.Errno) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.gone:
		return nil, syscall.ENOENT
	case t.root != nil:
		return t.root, 0
	case t.err != nil:
		return nil, syscall.EIO
	}
	name := c.pathName(t.path)
	// The open outlives the request that asked (the next request gets
	// the table); the listing bounds, not the kernel's patience.
	octx, cancel := context.WithTimeout(c.runCtx, 2*time.Minute)
	defer cancel()
	samples, closer, err := c.opts.Open(octx, t.path)
	var r *Root
	if err == nil {
		opts := c.opts.Table
		opts.Samples, opts.Stats = samples, nil
		opts.Logger = c.log.With("table", name)
		if r, err = newRoot(octx, opts, &tableIDs{cat: c, table: t.num}, &c.kernelInodes); err != nil {
			_ = closer.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil && c.runCtx.Err() == nil {
			return nil, syscall.EINTR
		}
		t.err = err
		c.failOnce(name, "table cannot be opened; it answers EIO until the catalog lists it again", err)
		return nil, syscall.EIO
	}
	c.recovered(name, "table opens again")
	r.server = c.server
	rctx, stop := context.WithCancel(c.runCtx)
	go r.Run(rctx)
	t.root, t.closer, t.cancel = r, closer, stop
	c.log.Info("opened table", "table", name, "versions", len(r.versions), "latest", r.latest)
	return r, 0
}

// opened returns the Root of a table node's table: opened, since the
// kernel knows the node (ENOENT once the table is dropped).
func (t *catTable) opened() (*Root, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.root, t.root != nil
}

// failOnce logs err under key once per cause.
func (c *Catalog) failOnce(key, msg string, err error) {
	cause := err.Error()
	c.failMu.Lock()
	same := c.failed[key] == cause
	c.failed[key] = cause
	c.failMu.Unlock()
	if !same {
		c.log.Warn(msg, "where", key, "err", cause)
	}
}

// recovered logs, once, that key works again.
func (c *Catalog) recovered(key, msg string) {
	c.failMu.Lock()
	_, was := c.failed[key]
	delete(c.failed, key)
	c.failMu.Unlock()
	if was {
		c.log.Info(msg, "where", key)
	}
}

// ensureListed lists d at first use.
func (c *Catalog) ensureListed(ctx context.Context, d *catDir) syscall.Errno {
	d.mu.Lock()
	listed := d.listed
	d.mu.Unlock()
	if listed {
		return 0
	}
	if c.dirGone(d) {
		return syscall.ENOENT
	}
	if err := c.relist(ctx, d); err != nil {
		if ctx.Err() != nil {
			return syscall.EINTR
		}
		return syscall.EIO
	}
	return 0
}

// dirEntry fills out for a child of a catalog directory.
func (c *Catalog) dirEntry(it catItem, mtime time.Time, out *fuse.EntryOut) {
	var id uint64
	if it.table >= 0 {
		id = c.tableAt(it.table).dir
	} else {
		id = c.dirAt(it.dir).id
	}
	*out = fuse.EntryOut{NodeId: id, Generation: 1}
	dirAttr(&out.Attr, mtime)
	out.Attr.Ino = id
	out.SetEntryTimeout(c.opts.Table.Refresh)
	out.SetAttrTimeout(c.opts.Table.Refresh)
	c.kernelInodes.Add(1)
}

// route resolves a request on a directory node: a table's node goes to
// the table's Root (its directory opens the table), a catalog directory
// is listed at its first use and returned.
func (c *Catalog) route(cancel <-chan struct{}, h *fuse.InHeader) (*Root, *catDir, fuse.Status) {
	tg, ok := c.target(h.NodeId)
	if !ok {
		return nil, nil, fuse.ENOENT
	}
	ctx := requestCtx(cancel, h)
	if tg.t != nil {
		r, errno := c.tableRoot(ctx, tg)
		return r, nil, status(errno)
	}
	return nil, tg.dir, status(c.ensureListed(ctx, tg.dir))
}

// Lookup implements fuse.RawFileSystem.
func (c *Catalog) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	r, d, st := c.route(cancel, h)
	if st != fuse.OK {
		return st
	}
	if r != nil {
		return r.Lookup(cancel, h, name, out)
	}
	d.mu.Lock()
	it, ok := d.children[name]
	mtime := d.mtime
	d.mu.Unlock()
	if !ok {
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(c.opts.Table.Refresh)
		return fuse.OK
	}
	c.dirEntry(it, mtime, out)
	return fuse.OK
}

// tableRoot is the Root serving a table node: the table's directory opens
// the table; its other nodes need it open.
func (c *Catalog) tableRoot(ctx context.Context, tg target) (*Root, syscall.Errno) {
	if tg.n.kind == kindRoot {
		return c.open(ctx, tg.t)
	}
	if r, ok := tg.t.opened(); ok {
		return r, 0
	}
	return nil, syscall.ENOENT
}

// Forget implements fuse.RawFileSystem.
func (c *Catalog) Forget(nodeid, nlookup uint64) { c.kernelInodes.Add(-int64(nlookup)) }

// GetAttr implements fuse.RawFileSystem: a table's directory answers
// without opening the table.
func (c *Catalog) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	tg, ok := c.target(in.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	if tg.t != nil && tg.n.kind != kindRoot {
		r, errno := c.tableRoot(requestCtx(cancel, &in.InHeader), tg)
		if errno != 0 {
			return status(errno)
		}
		return r.GetAttr(cancel, in, out)
	}
	if tg.t != nil {
		tg.t.mu.Lock()
		gone := tg.t.gone
		tg.t.mu.Unlock()
		if gone {
			return fuse.ENOENT
		}
	}
	mtime := c.started
	if tg.dir != nil {
		tg.dir.mu.Lock()
		if !tg.dir.mtime.IsZero() {
			mtime = tg.dir.mtime
		}
		tg.dir.mu.Unlock()
	}
	dirAttr(&out.Attr, mtime)
	out.Attr.Ino = in.NodeId
	if in.NodeId == fuse.FUSE_ROOT_ID {
		out.SetTimeout(expireAtOnce) // see Root.attr
	} else {
		out.SetTimeout(c.opts.Table.Refresh)
	}
	return fuse.OK
}

// OpenDir implements fuse.RawFileSystem: a catalog directory is listed
// (at first use); a table's directory opens the table.
func (c *Catalog) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	r, _, st := c.route(cancel, &in.InHeader)
	if r != nil && st == fuse.OK {
		return r.OpenDir(cancel, in, out)
	}
	return st
}

// ReadDir implements fuse.RawFileSystem.
func (c *Catalog) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return c.readDir(cancel, in, out, false)
}

// ReadDirPlus implements fuse.RawFileSystem.
func (c *Catalog) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return c.readDir(cancel, in, out, true)
}

func (c *Catalog) readDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	r, d, st := c.route(cancel, &in.InHeader)
	switch {
	case st != fuse.OK:
		return st
	case r != nil && plus:
		return r.ReadDirPlus(cancel, in, out)
	case r != nil:
		return r.ReadDir(cancel, in, out)
	}
	d.mu.Lock()
	names, children, mtime := d.names, d.children, d.mtime
	d.mu.Unlock()
	for i := int(in.Offset); i < len(names)+2; i++ {
		name, id := ".", in.NodeId
		var it catItem
		if i == 1 {
			name, id = "..", fuse.FUSE_ROOT_ID
		} else if i >= 2 {
			name = names[i-2]
			var ok bool
			if it, ok = children[name]; !ok {
				continue
			}
			if it.table >= 0 {
				id = c.tableAt(it.table).dir
			} else {
				id = c.dirAt(it.dir).id
			}
		}
		de := fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: id, Off: uint64(i + 1)}
		if !plus {
			if !out.AddDirEntry(de) {
				break
			}
			continue
		}
		e := out.AddDirLookupEntry(de)
		if e == nil {
			break
		}
		if i >= 2 {
			c.dirEntry(it, mtime, e)
		}
	}
	return fuse.OK
}

// ReleaseDir implements fuse.RawFileSystem.
func (c *Catalog) ReleaseDir(in *fuse.ReleaseIn) {}

// The requests below name only a table's nodes (files, links).

func (c *Catalog) tableOf(cancel <-chan struct{}, h *fuse.InHeader) (*Root, fuse.Status) {
	tg, ok := c.target(h.NodeId)
	if !ok {
		return nil, fuse.ENOENT
	}
	if tg.t == nil {
		return nil, fuse.EISDIR
	}
	r, errno := c.tableRoot(requestCtx(cancel, h), tg)
	return r, status(errno)
}

// Read implements fuse.RawFileSystem.
func (c *Catalog) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	r, st := c.tableOf(cancel, &in.InHeader)
	if st != fuse.OK {
		return nil, st
	}
	return r.Read(cancel, in, buf)
}

// Readlink implements fuse.RawFileSystem.
func (c *Catalog) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	r, st := c.tableOf(cancel, h)
	if st != fuse.OK {
		return nil, st
	}
	return r.Readlink(cancel, h)
}

// GetXAttr implements fuse.RawFileSystem.
func (c *Catalog) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	r, st := c.tableOf(cancel, h)
	if st != fuse.OK {
		return 0, fuse.ENOATTR
	}
	return r.GetXAttr(cancel, h, attr, dest)
}

// ListXAttr implements fuse.RawFileSystem.
func (c *Catalog) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	r, st := c.tableOf(cancel, h)
	if st != fuse.OK {
		return 0, fuse.OK
	}
	return r.ListXAttr(cancel, h, dest)
}

// Open implements fuse.RawFileSystem (see Root.Open).
func (c *Catalog) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.Flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return fuse.EROFS
	}
	return fuse.ENOSYS
}

// Flush implements fuse.RawFileSystem (see Root.Flush).
func (c *Catalog) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

// Fsync implements fuse.RawFileSystem (see Root.Fsync).
func (c *Catalog) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.ENOSYS }

// FsyncDir implements fuse.RawFileSystem (see Root.Fsync).
func (c *Catalog) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.ENOSYS }

// Ioctl implements fuse.RawFileSystem (see Root.Ioctl).
func (c *Catalog) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	return fuse.Status(syscall.ENOTTY)
}

// Access implements fuse.RawFileSystem (see Root.Access).
func (c *Catalog) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status { return fuse.ENOSYS }

// StatFs implements fuse.RawFileSystem: a full read-only filesystem of no
// known size (the catalog's tables are many; each is opened on use).
func (c *Catalog) StatFs(cancel <-chan struct{}, in *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	*out = fuse.StatfsOut{Bsize: statfsBlock, Frsize: statfsBlock, NameLen: statfsNameMax}
	return fuse.OK
}
