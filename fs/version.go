package fs

import (
	"context"
	"strconv"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// versionsDir is MOUNT/version: one directory per readable version, from
// the last poll of the log.
type versionsDir struct {
	gofs.Inode
	root *Root
}

var _ = (gofs.NodeLookuper)((*versionsDir)(nil))
var _ = (gofs.NodeReaddirer)((*versionsDir)(nil))
var _ = (gofs.NodeGetattrer)((*versionsDir)(nil))

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

// Lookup implements gofs.NodeLookuper.
func (d *versionsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	v, ok := parseIndex(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	info, ok := d.root.version(v)
	if !ok {
		return nil, syscall.ENOENT
	}
	vd := &versionDir{root: d.root, info: info}
	vd.attr(&out.Attr)
	d.root.immutable(out)
	return d.NewInode(ctx, vd, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindVersion, v, 0)}), 0
}

// Readdir implements gofs.NodeReaddirer.
func (d *versionsDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	d.root.mu.RLock()
	vs := d.root.versions
	d.root.mu.RUnlock()
	entries := make([]fuse.DirEntry, len(vs))
	for i, v := range vs {
		entries[i] = fuse.DirEntry{Name: strconv.FormatInt(v.Version, 10), Mode: syscall.S_IFDIR, Ino: ino(kindVersion, v.Version, 0)}
	}
	return gofs.NewListDirStream(entries), 0
}

// Getattr implements gofs.NodeGetattrer.
func (d *versionsDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.root.dirAttr(&out.Attr, d.root.latestTime())
	out.SetTimeout(d.root.opts.Refresh)
	return 0
}

// immutable sets the long timeouts of everything under version/N.
func (r *Root) immutable(out *fuse.EntryOut) {
	out.SetEntryTimeout(r.opts.Immutable)
	out.SetAttrTimeout(r.opts.Immutable)
}

// versionDir is version/N: _commit.json, _schema.json, shard/. Its
// snapshot is built on first need (not to list it, nor to enter shard/).
type versionDir struct {
	gofs.Inode
	root *Root
	info snapshot.VersionInfo
}

var _ = (gofs.NodeLookuper)((*versionDir)(nil))
var _ = (gofs.NodeReaddirer)((*versionDir)(nil))
var _ = (gofs.NodeGetattrer)((*versionDir)(nil))

func (d *versionDir) attr(a *fuse.Attr) { d.root.dirAttr(a, d.info.Timestamp) }

func (d *versionDir) path() string { return "version/" + strconv.FormatInt(d.info.Version, 10) }

// version is the sample layer's version, built on first use.
func (d *versionDir) version(ctx context.Context) (*sample.Version, error) {
	return d.root.opts.Samples.Version(ctx, d.info.Version)
}

// Lookup implements gofs.NodeLookuper.
func (d *versionDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	v := d.info.Version
	switch name {
	case "shard":
		sd := &shardsDir{vd: d}
		sd.attr(&out.Attr)
		d.root.immutable(out)
		return d.NewInode(ctx, sd, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindShards, v, 0)}), 0
	case "_commit.json", "_schema.json":
		ver, err := d.version(ctx)
		if err != nil {
			return nil, errnoFor(ctx, d.root.log, "lookup", d.path()+"/"+name, err)
		}
		f := &bytesFile{data: ver.CommitJSON(), mtime: d.info.Timestamp, timeout: d.root.opts.Immutable}
		kind := kindCommit
		if name == "_schema.json" {
			f.data, kind = ver.SchemaJSON(), kindSchema
		}
		f.attr(&out.Attr)
		d.root.immutable(out)
		return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kind, v, 0)}), 0
	}
	return nil, syscall.ENOENT
}

// Readdir implements gofs.NodeReaddirer.
func (d *versionDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	v := d.info.Version
	return gofs.NewListDirStream([]fuse.DirEntry{
		{Name: "_commit.json", Mode: syscall.S_IFREG, Ino: ino(kindCommit, v, 0)},
		{Name: "_schema.json", Mode: syscall.S_IFREG, Ino: ino(kindSchema, v, 0)},
		{Name: "shard", Mode: syscall.S_IFDIR, Ino: ino(kindShards, v, 0)},
	}), 0
}

// Getattr implements gofs.NodeGetattrer.
func (d *versionDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.attr(&out.Attr)
	out.SetTimeout(d.root.opts.Immutable)
	return 0
}

// shardsDir is version/N/shard: 0 .. S-1.
type shardsDir struct {
	gofs.Inode
	vd *versionDir
}

var _ = (gofs.NodeLookuper)((*shardsDir)(nil))
var _ = (gofs.NodeReaddirer)((*shardsDir)(nil))
var _ = (gofs.NodeGetattrer)((*shardsDir)(nil))

func (d *shardsDir) attr(a *fuse.Attr) { d.vd.attr(a) }

// Lookup implements gofs.NodeLookuper.
func (d *shardsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	k, ok := parseIndex(name)
	if !ok || k >= int64(d.vd.root.opts.Samples.Shards()) {
		return nil, syscall.ENOENT
	}
	sd := &shardDir{vd: d.vd, k: int(k)}
	d.attr(&out.Attr)
	d.vd.root.immutable(out)
	return d.NewInode(ctx, sd, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino(kindShard, d.vd.info.Version, k)}), 0
}

// Readdir implements gofs.NodeReaddirer.
func (d *shardsDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	n := d.vd.root.opts.Samples.Shards()
	entries := make([]fuse.DirEntry, n)
	for k := range n {
		entries[k] = fuse.DirEntry{Name: strconv.Itoa(k), Mode: syscall.S_IFDIR, Ino: ino(kindShard, d.vd.info.Version, int64(k))}
	}
	return gofs.NewListDirStream(entries), 0
}

// Getattr implements gofs.NodeGetattrer.
func (d *shardsDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.attr(&out.Attr)
	out.SetTimeout(d.vd.root.opts.Immutable)
	return 0
}

// bytesFile is a small immutable file held in memory (_commit.json,
// _schema.json, _samples.tsv).
type bytesFile struct {
	gofs.Inode
	data    []byte
	mtime   time.Time
	timeout time.Duration
}

var _ = (gofs.NodeGetattrer)((*bytesFile)(nil))
var _ = (gofs.NodeOpener)((*bytesFile)(nil))
var _ = (gofs.NodeFlusher)((*bytesFile)(nil))
var _ = (gofs.NodeReader)((*bytesFile)(nil))

func (f *bytesFile) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o444
	a.Size = uint64(len(f.data))
	a.Nlink = 1
	setTime(a, f.mtime)
}

// Getattr implements gofs.NodeGetattrer.
func (f *bytesFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	out.SetTimeout(f.timeout)
	return 0
}

// Open implements gofs.NodeOpener: zero-message open (see sampleFile).
func (f *bytesFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return openReadOnly(flags)
}

// Flush implements gofs.NodeFlusher.
func (f *bytesFile) Flush(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// Read implements gofs.NodeReader.
func (f *bytesFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(f.data[off:min(int64(len(f.data)), off+int64(len(dest)))]), 0
}

// openReadOnly answers every open: EROFS for writing, else ENOSYS, which
// makes the kernel stop sending OPEN (and RELEASE) for the whole mount and
// keep file pages cached across opens, so a warm read costs no request.
func openReadOnly(flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, 0, syscall.ENOSYS
}
