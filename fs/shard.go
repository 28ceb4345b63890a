package fs

import (
	"context"
	"strconv"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// shardDir is version/N/shard/K: _samples.tsv, then the samples, or the
// class folders with --class-column. Its index is built on first lookup or
// listing; listings are generated from the index entry by entry.
type shardDir struct {
	gofs.Inode
	vd *versionDir
	k  int
}

var _ = (gofs.NodeLookuper)((*shardDir)(nil))
var _ = (gofs.NodeOpendirHandler)((*shardDir)(nil)) // lazy listing, FOPEN_CACHE_DIR
var _ = (gofs.NodeGetattrer)((*shardDir)(nil))

func (d *shardDir) path() string { return d.vd.path() + "/shard/" + strconv.Itoa(d.k) }

func (d *shardDir) shard(ctx context.Context) (*sample.Shard, syscall.Errno) {
	v, err := d.vd.version(ctx)
	if err != nil {
		return nil, errnoFor(ctx, d.vd.root.log, "index", d.path(), err)
	}
	sh, err := v.Shard(ctx, d.k)
	if err != nil {
		return nil, errnoFor(ctx, d.vd.root.log, "index", d.path(), err)
	}
	return sh, 0
}

// Getattr implements gofs.NodeGetattrer.
func (d *shardDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.vd.attr(&out.Attr)
	out.SetTimeout(d.vd.root.opts.Immutable)
	return 0
}

const manifestName = sample.ManifestName

// Lookup implements gofs.NodeLookuper.
func (d *shardDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	sh, errno := d.shard(ctx)
	if errno != 0 {
		return nil, errno
	}
	r, v := d.vd.root, d.vd.info.Version
	if name == manifestName {
		f := &bytesFile{data: sh.Manifest(), mtime: d.vd.info.Timestamp, timeout: r.opts.Immutable}
		f.attr(&out.Attr)
		r.immutable(out)
		return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindManifest, v, int64(d.k))}), 0
	}
	if xn := r.extentsName(); xn != "" && name == xn {
		return d.lookupExtents(ctx, sh, out)
	}
	if sh.HasClasses() {
		if c, ok := sh.ClassIndex(name); ok {
			cd := &classDir{sd: d, sh: sh, c: c}
			d.vd.attr(&out.Attr)
			r.immutable(out)
			return d.NewInode(ctx, cd, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: classIno(v, d.k, c)}), 0
		}
	}
	pos, ok := sh.Lookup(name, -1)
	if !ok {
		return nil, syscall.ENOENT
	}
	return newSample(ctx, &d.Inode, d.vd, sh, pos, out)
}

// OpendirHandle implements gofs.NodeOpendirHandler.
func (d *shardDir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	sh, errno := d.shard(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	v := d.vd.info.Version
	nc := len(sh.Classes())
	// The manifests, then the class folders, then the samples.
	nm := 1
	xn := d.vd.root.extentsName()
	if xn != "" {
		nm = 2
	}
	h := &dirHandle{n: nm + nc + sh.RootLen(), entry: func(i int) fuse.DirEntry {
		switch {
		case i == 0:
			return fuse.DirEntry{Name: manifestName, Mode: syscall.S_IFREG, Ino: ino(kindManifest, v, int64(d.k))}
		case i < nm:
			return fuse.DirEntry{Name: xn, Mode: syscall.S_IFREG, Ino: ino(kindExtents, v, int64(d.k))}
		case i-nm < nc:
			return fuse.DirEntry{Name: sh.Classes()[i-nm], Mode: syscall.S_IFDIR, Ino: classIno(v, d.k, i-nm)}
		}
		pos := sh.RootAt(i - nm - nc)
		return fuse.DirEntry{Name: sh.Name(pos), Mode: syscall.S_IFREG, Ino: ino(kindSample, v, sh.Global(pos))}
	}}
	return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// classDir is version/N/shard/K/<class>.
type classDir struct {
	gofs.Inode
	sd *shardDir
	sh *sample.Shard
	c  int
}

var _ = (gofs.NodeLookuper)((*classDir)(nil))
var _ = (gofs.NodeOpendirHandler)((*classDir)(nil))
var _ = (gofs.NodeGetattrer)((*classDir)(nil))

// Getattr implements gofs.NodeGetattrer.
func (d *classDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.sd.vd.attr(&out.Attr)
	out.SetTimeout(d.sd.vd.root.opts.Immutable)
	return 0
}

// Lookup implements gofs.NodeLookuper.
func (d *classDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	pos, ok := d.sh.Lookup(name, d.c)
	if !ok {
		return nil, syscall.ENOENT
	}
	return newSample(ctx, &d.Inode, d.sd.vd, d.sh, pos, out)
}

// OpendirHandle implements gofs.NodeOpendirHandler.
func (d *classDir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	members := d.sh.Class(d.c)
	v := d.sd.vd.info.Version
	h := &dirHandle{n: len(members), entry: func(i int) fuse.DirEntry {
		pos := int(members[i])
		return fuse.DirEntry{Name: d.sh.Name(pos), Mode: syscall.S_IFREG, Ino: ino(kindSample, v, d.sh.Global(pos))}
	}}
	return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dirHandle lists n entries generated on demand ("." and ".." first); the
// offset of entry i is i+1, so the kernel can seek back.
type dirHandle struct {
	n     int
	entry func(i int) fuse.DirEntry
	next  int // next index, counting "." and ".." as 0 and 1
}

var _ = (gofs.FileReaddirenter)((*dirHandle)(nil))
var _ = (gofs.FileSeekdirer)((*dirHandle)(nil))

// Readdirent implements gofs.FileReaddirenter.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	i := h.next
	if i >= h.n+2 {
		return nil, 0
	}
	h.next++
	var de fuse.DirEntry
	switch i {
	case 0:
		de = fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR}
	case 1:
		de = fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR}
	default:
		de = h.entry(i - 2)
	}
	de.Off = uint64(i + 1)
	return &de, 0
}

// Seekdir implements gofs.FileSeekdirer.
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off > uint64(h.n+2) {
		return syscall.EINVAL
	}
	h.next = int(off)
	return 0
}

// sampleFile is one sample: its bytes come from the sample layer (one
// Parquet page, or a cached rendering).
type sampleFile struct {
	gofs.Inode
	vd  *versionDir
	sh  *sample.Shard
	pos int
}

var _ = (gofs.NodeGetattrer)((*sampleFile)(nil))
var _ = (gofs.NodeOpener)((*sampleFile)(nil))  // ENOSYS: zero-message open
var _ = (gofs.NodeFlusher)((*sampleFile)(nil)) // ENOSYS: no FLUSH on close
var _ = (gofs.NodeReader)((*sampleFile)(nil))

// newSample is the inode of a sample. Shards hold only samples of data
// files that were indexed (a shard needing an unreadable one fails whole),
// so every size is known.
func newSample(ctx context.Context, parent *gofs.Inode, vd *versionDir, sh *sample.Shard, pos int, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	f := &sampleFile{vd: vd, sh: sh, pos: pos}
	f.attr(&out.Attr)
	vd.root.immutable(out)
	return parent.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindSample, vd.info.Version, sh.Global(pos))}), 0
}

func (f *sampleFile) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o444
	a.Size = uint64(f.sh.Size(f.pos))
	a.Nlink = 1
	a.Blksize = 4096
	a.Blocks = (a.Size + 511) / 512
	setTime(a, f.vd.info.Timestamp)
}

// Getattr implements gofs.NodeGetattrer.
func (f *sampleFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	out.SetTimeout(f.vd.root.opts.Immutable)
	return 0
}

// Open implements gofs.NodeOpener.
func (f *sampleFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return openReadOnly(flags)
}

// Flush implements gofs.NodeFlusher.
func (f *sampleFile) Flush(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// Read implements gofs.NodeReader.
func (f *sampleFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	start := time.Now()
	n, err := f.sh.ReadAt(ctx, f.pos, dest, off)
	f.vd.root.readLatency.Observe(time.Since(start))
	if err != nil {
		return nil, errnoFor(ctx, f.vd.root.log, "read", f.sh.String()+" "+f.sh.Path(f.pos), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}
