package fusefs

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// What each kind of node is: its attributes and kernel timeouts (attr),
// its children by name (child), and where its content comes from (see
// read.go and dir.go). Nothing is kept per node: a node id says which
// version, shard and sample; the sample layer holds their indexes.

// versionPath names version v for log lines.
func versionPath(v int64) string { return "version/" + strconv.FormatInt(v, 10) }

func shardPath(v int64, k int) string { return versionPath(v) + "/shard/" + strconv.Itoa(k) }

// version returns the sample layer's version v.
func (r *Root) sampleVersion(ctx context.Context, v int64) (*sample.Version, syscall.Errno) {
	ver, err := r.opts.Samples.Version(ctx, v)
	if err != nil {
		return nil, errnoFor(ctx, r.log, "version", versionPath(v), err)
	}
	return ver, 0
}

// shard returns shard k of version v, building its index on first use.
func (r *Root) shard(ctx context.Context, v int64, k int) (*sample.Shard, syscall.Errno) {
	ver, errno := r.sampleVersion(ctx, v)
	if errno != 0 {
		return nil, errno
	}
	sh, err := ver.Shard(ctx, k)
	if err != nil {
		return nil, errnoFor(ctx, r.log, "index", shardPath(v, k), err)
	}
	return sh, 0
}

// sampleAt returns the shard and position of sample node n.
func (r *Root) sampleAt(ctx context.Context, n node) (*sample.Shard, int, syscall.Errno) {
	ver, errno := r.sampleVersion(ctx, n.version)
	if errno != 0 {
		return nil, 0, errno
	}
	sh, pos, err := ver.Locate(ctx, n.item)
	if err != nil {
		return nil, 0, errnoFor(ctx, r.log, "index", versionPath(n.version)+" sample "+strconv.FormatInt(n.item, 10), err)
	}
	return sh, pos, 0
}

// known reports whether version v is in the last listing.
func (r *Root) known(v int64) bool {
	_, ok := r.version(v)
	return ok
}

// attr fills the attributes of node n and returns their kernel timeout.
func (r *Root) attr(ctx context.Context, n node, a *fuse.Attr) (time.Duration, syscall.Errno) {
	switch n.kind {
	case kindRoot:
		// Never cached: a stat of the mount point after the server died
		// must say ENOTCONN (CheckMountpoint, scripts), not what an
		// earlier stat (an overlay's mount, `ls -ld`) left in the kernel.
		dirAttr(a, r.latestTime())
		return expireAtOnce, 0
	case kindVersions:
		dirAttr(a, r.latestTime())
		return r.opts.Refresh, 0
	case kindAtDir, kindMetaDir:
		dirAttr(a, r.started)
		return r.opts.Refresh, 0
	case kindLatest:
		t, _ := r.latestTarget()
		linkAttr(a, t, r.latestTime())
		return r.opts.Refresh, 0
	case kindAt:
		linkAttr(a, atTarget(n.version), r.versionTime(n.version))
		return r.opts.Refresh, 0
	case kindStats:
		r.stats.attr(a)
		return expireAtOnce, 0
	}
	if !r.known(n.version) {
		return 0, syscall.ENOENT
	}
	mtime := r.versionTime(n.version)
	switch n.kind {
	case kindVersion, kindShards:
		dirAttr(a, mtime)
	case kindShard:
		if n.item >= int64(r.opts.Samples.Shards()) {
			return 0, syscall.ENOENT
		}
		dirAttr(a, mtime)
	case kindClass:
		dirAttr(a, mtime)
	case kindCommit, kindSchema:
		ver, errno := r.sampleVersion(ctx, n.version)
		if errno != 0 {
			return 0, errno
		}
		data := ver.CommitJSON()
		if n.kind == kindSchema {
			data = ver.SchemaJSON()
		}
		fileAttr(a, int64(len(data)), mtime)
	case kindSampleList:
		sh, errno := r.shard(ctx, n.version, int(n.item))
		if errno != 0 {
			return 0, errno
		}
		fileAttr(a, sh.ListSize(), mtime)
	case kindExtents:
		f, errno := r.extentsFile(ctx, n)
		if errno != 0 {
			return 0, errno
		}
		fileAttr(a, f.size, time.Now())
		return expireAtOnce, 0
	case kindSample:
		sh, pos, errno := r.sampleAt(ctx, n)
		if errno != 0 {
			return 0, errno
		}
		fileAttr(a, sh.Size(pos), mtime)
	case kindTar:
		sh, errno := r.shard(ctx, n.version, int(n.item))
		if errno != 0 {
			return 0, errno
		}
		fileAttr(a, sh.Tar().Size(), mtime)
	default:
		return 0, syscall.ENOENT
	}
	return r.opts.Immutable, 0
}

// child finds the child name of directory n; ok false: no such name.
func (r *Root) child(ctx context.Context, n node, name string) (node, syscall.Errno) {
	switch n.kind {
	case kindRoot:
		switch name {
		case "version":
			return node{kind: kindVersions}, 0
		case "latest":
			return node{kind: kindLatest}, 0
		case "at":
			return node{kind: kindAtDir}, 0
		case ".deltafs":
			return node{kind: kindMetaDir}, 0
		}
	case kindMetaDir:
		if name == "stats" {
			return node{kind: kindStats}, 0
		}
	case kindVersions:
		if v, ok := parseIndex(name); ok && r.known(v) {
			if v >= maxVersion {
				r.log.Warn("version too large to serve (inode numbers give versions 26 bits)", "version", v)
				return node{}, syscall.ENOENT
			}
			return node{kind: kindVersion, version: v}, 0
		}
	case kindAtDir:
		ts, err := snapshot.ParseTime(name)
		if err != nil {
			return node{}, syscall.ENOENT
		}
		v, err := r.opts.Samples.VersionAt(ctx, ts)
		if err != nil {
			if ctx.Err() != nil {
				return node{}, syscall.EINTR
			}
			r.log.Debug("at: no version", "time", name, "err", err)
			return node{}, syscall.ENOENT
		}
		if v >= maxVersion {
			return node{}, syscall.ENOENT
		}
		return node{kind: kindAt, version: v}, 0
	case kindVersion:
		switch name {
		case "shard":
			return node{kind: kindShards, version: n.version}, 0
		case "_commit.json":
			return node{kind: kindCommit, version: n.version}, 0
		case "_schema.json":
			return node{kind: kindSchema, version: n.version}, 0
		}
	case kindShards:
		kind, index := kindShard, name
		if stem, ok := strings.CutSuffix(name, sample.TarExt); ok {
			kind, index = kindTar, stem
		}
		if k, ok := parseIndex(index); ok && k < int64(r.opts.Samples.Shards()) {
			return node{kind: kind, version: n.version, item: k}, 0
		}
	case kindShard:
		k := int(n.item)
		sh, errno := r.shard(ctx, n.version, k)
		if errno != 0 {
			return node{}, errno
		}
		switch {
		case name == sample.ListName:
			return node{kind: kindSampleList, version: n.version, item: n.item}, 0
		case name == r.extentsName() && name != "":
			return node{kind: kindExtents, version: n.version, item: n.item}, 0
		}
		if sh.HasClasses() {
			if c, ok := sh.ClassIndex(name); ok {
				return node{kind: kindClass, version: n.version, item: classItem(k, c)}, 0
			}
			return node{}, syscall.ENOENT
		}
		if pos, ok := sh.Lookup(name, -1); ok {
			return node{kind: kindSample, version: n.version, item: sh.Global(pos)}, 0
		}
	case kindClass:
		k, c := shardOfClass(n.item)
		sh, errno := r.shard(ctx, n.version, k)
		if errno != 0 {
			return node{}, errno
		}
		if pos, ok := sh.Lookup(name, c); ok {
			return node{kind: kindSample, version: n.version, item: sh.Global(pos)}, 0
		}
	}
	return node{}, syscall.ENOENT
}

// negativeTimeout is how long the kernel may remember that a name is not
// in directory n: under version/N nothing ever appears.
func (r *Root) negativeTimeout(n node) time.Duration {
	switch n.kind {
	case kindRoot, kindVersions, kindAtDir, kindMetaDir:
		return r.opts.Refresh
	}
	return r.opts.Immutable
}

// Lookup implements fuse.RawFileSystem.
func (r *Root) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	r.ctr.Lookups.Add(1)
	parent, ok := r.decode(h.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	ctx := requestCtx(cancel, h)
	c, errno := r.child(ctx, parent, name)
	r.entered(parent, c)
	if errno == syscall.ENOENT {
		// A negative entry: the kernel asks again only after the timeout.
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(r.negativeTimeout(parent))
		return fuse.OK
	}
	if errno != 0 {
		return status(errno)
	}
	return status(r.entry(ctx, c, out))
}

// entry fills out for node c and counts the kernel's lookup.
func (r *Root) entry(ctx context.Context, c node, out *fuse.EntryOut) syscall.Errno {
	id, ok := r.ino(c.kind, c.version, c.item)
	if !ok {
		return syscall.ENOENT
	}
	timeout, errno := r.attr(ctx, c, &out.Attr)
	if errno != 0 {
		return errno
	}
	out.NodeId, out.Generation, out.Attr.Ino = id, 1, id
	out.SetEntryTimeout(r.entryTimeout(c, timeout))
	out.SetAttrTimeout(timeout)
	r.kernelInodes.Add(1)
	return 0
}

// entryTimeout is how long the kernel may keep a name's entry: the
// attribute timeout, except for files whose attributes expire at once
// (their names do not change).
func (r *Root) entryTimeout(c node, attrTimeout time.Duration) time.Duration {
	switch c.kind {
	case kindStats:
		return r.opts.Refresh
	case kindExtents:
		return r.opts.Immutable
	}
	return attrTimeout
}

// Forget implements fuse.RawFileSystem.
func (r *Root) Forget(nodeid, nlookup uint64) { r.kernelInodes.Add(-int64(nlookup)) }

// GetAttr implements fuse.RawFileSystem.
func (r *Root) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	n, ok := r.decode(in.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	timeout, errno := r.attr(requestCtx(cancel, &in.InHeader), n, &out.Attr)
	if errno != 0 {
		return status(errno)
	}
	out.Attr.Ino = in.NodeId
	out.SetTimeout(timeout)
	return fuse.OK
}

// Readlink implements fuse.RawFileSystem.
func (r *Root) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n, ok := r.decode(h.NodeId)
	if !ok {
		return nil, fuse.ENOENT
	}
	switch n.kind {
	case kindLatest:
		if t, ok := r.latestTarget(); ok {
			return t, fuse.OK
		}
	case kindAt:
		return atTarget(n.version), fuse.OK
	}
	return nil, fuse.ENOENT
}

// Open implements fuse.RawFileSystem: writes fail with EROFS; reads get
// ENOSYS, which makes the kernel stop sending OPEN (and RELEASE) for the
// whole mount and keep file pages cached across opens, so that a warm
// read costs no request.
func (r *Root) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.Flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return fuse.EROFS
	}
	return fuse.ENOSYS
}

// Flush implements fuse.RawFileSystem: ENOSYS stops FLUSH on every close.
func (r *Root) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

// Fsync implements fuse.RawFileSystem: nothing is ever written, so there
// is nothing to sync. ENOSYS is success for fsync(2), and the kernel stops
// asking.
func (r *Root) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.ENOSYS }

// FsyncDir implements fuse.RawFileSystem (see Fsync).
func (r *Root) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.ENOSYS }

// Ioctl implements fuse.RawFileSystem: no file is a terminal. Linux
// forwards every ioctl on a FUSE file, whatever was answered before, and
// CPython's open() asks isatty (TCGETS) on every file it opens with
// default buffering: one round trip per open, answered here at once.
func (r *Root) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	r.ctr.Ioctls.Add(1)
	return fuse.Status(syscall.ENOTTY)
}

// Access implements fuse.RawFileSystem: ENOSYS makes the kernel check
// permissions itself (mode bits) and stop asking.
func (r *Root) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status { return fuse.ENOSYS }

// parseIndex parses a canonical non-negative decimal: ASCII digits only,
// no sign, no leading zero ("7", not "07", "+7" or "٧"), so that every
// version and shard has exactly one name.
func parseIndex(name string) (int64, bool) {
	if name == "" || len(name) > 1 && name[0] == '0' || len(name) > 18 {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(name, 10, 64)
	return n, err == nil
}
