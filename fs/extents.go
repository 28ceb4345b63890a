package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// Extents says where samples' bytes lie in the disk cache (package extents
// implements it). fs only presents what it returns: the extent xattr on
// sample files and the per-shard extent manifest.
type Extents interface {
	// XattrName is the sample files' extent attribute.
	XattrName() string
	// Xattr is that attribute's value for the sample at pos, materialising
	// the sample in the disk cache if needed.
	Xattr(ctx context.Context, sh *sample.Shard, pos int) ([]byte, error)
	// ManifestName is the per-shard extent manifest's file name.
	ManifestName() string
	// Manifest is its content. materialize false only computes it (for
	// the size); true first writes every sample of the shard to the disk
	// cache. Both give the same bytes.
	Manifest(ctx context.Context, sh *sample.Shard, materialize bool) ([]byte, error)
}

// extentsName is the extent manifest's name, "" without Options.Extents.
func (r *Root) extentsName() string {
	if r.opts.Extents == nil {
		return ""
	}
	return r.opts.Extents.ManifestName()
}

// xattrs reports whether sample files serve the extent attribute.
func (r *Root) xattrs() bool { return r.opts.Xattrs && r.opts.Extents != nil }

// extentsFile is version/N/shard/K/_extents.tsv. Its size is computed at
// lookup without I/O; every open materialises the shard's samples in the
// disk cache again (re-writing evicted ones) and then serves the same
// bytes, so the kernel may keep its pages.
type extentsFile struct {
	gofs.Inode
	sd    *shardDir
	sh    *sample.Shard
	size  int64
	mtime time.Time
}

var _ = (gofs.NodeGetattrer)((*extentsFile)(nil))
var _ = (gofs.NodeOpener)((*extentsFile)(nil))
var _ = (gofs.NodeReader)((*extentsFile)(nil))

func (d *shardDir) lookupExtents(ctx context.Context, sh *sample.Shard, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	r := d.vd.root
	data, err := r.opts.Extents.Manifest(ctx, sh, false)
	if err != nil {
		return nil, toErrno(r.log, "extents", d.path()+"/"+r.extentsName(), err)
	}
	f := &extentsFile{sd: d, sh: sh, size: int64(len(data)), mtime: d.vd.info.Timestamp}
	f.attr(&out.Attr)
	r.immutable(out)
	return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindExtents, d.vd.info.Version, int64(d.k))}), 0
}

func (f *extentsFile) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o444
	a.Size = uint64(f.size)
	a.Nlink = 1
	setTime(a, f.mtime)
}

// Getattr implements gofs.NodeGetattrer.
func (f *extentsFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	out.SetTimeout(f.sd.vd.root.opts.Immutable)
	return 0
}

// extentsHandle holds the manifest an open rendered.
type extentsHandle struct{ data []byte }

// Open implements gofs.NodeOpener: it materialises the shard.
func (f *extentsFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EROFS
	}
	r := f.sd.vd.root
	path := f.sd.path() + "/" + r.extentsName()
	data, err := r.opts.Extents.Manifest(ctx, f.sh, true)
	if err != nil {
		return nil, 0, toErrno(r.log, "extents", path, err)
	}
	if int64(len(data)) != f.size {
		r.log.Error("I/O error: extent manifest changed size", "path", path, "size", len(data), "at_lookup", f.size)
		return nil, 0, syscall.EIO
	}
	return &extentsHandle{data: data}, fuse.FOPEN_KEEP_CACHE, 0
}

// Read implements gofs.NodeReader.
func (f *extentsFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*extentsHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

var _ = (gofs.NodeGetxattrer)((*sampleFile)(nil))
var _ = (gofs.NodeListxattrer)((*sampleFile)(nil))

// Getxattr implements gofs.NodeGetxattrer: the extent attribute, which
// materialises the sample in the disk cache. Only reached with --xattrs
// (otherwise the mount disables xattrs and the kernel never asks).
func (f *sampleFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	r := f.vd.root
	if !r.xattrs() || attr != r.opts.Extents.XattrName() {
		return 0, syscall.ENODATA
	}
	v, err := r.opts.Extents.Xattr(ctx, f.sh, f.pos)
	if err != nil {
		return 0, toErrno(r.log, "getxattr", f.sh.String()+" "+f.sh.Path(f.pos), err)
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Listxattr implements gofs.NodeListxattrer.
func (f *sampleFile) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	r := f.vd.root
	if !r.xattrs() {
		return 0, 0
	}
	list := r.opts.Extents.XattrName() + "\x00"
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}
