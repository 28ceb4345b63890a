package fs

import (
	"context"
	"sync"
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
	// Manifest is its content. materialize false only computes its shape
	// without I/O, for the size (its checksums are unknown); true first
	// makes sure every sample of the shard is in the disk cache, whole,
	// and lists the checksums of the bytes there. Both have the same
	// length: the content changes, the size the kernel learnt at lookup
	// does not.
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
// lookup without I/O (an extent's place depends only on the sample, and its
// checksum field has a fixed width); every read at offset 0 materialises the
// shard's samples in the disk cache again (re-writing evicted or broken
// ones) and serves that manifest, with the checksums of the bytes now in
// the cache. Reads at other offsets serve the last one materialised (its
// lines lie at the same offsets in every materialisation: only a checksum
// can change, from unknown to known or back), or materialise first when
// there is none yet: the lookup-time shape, whose checksums are unknown, is
// never served.
//
// Sample files are opened without an OPEN message (ENOSYS), which turns
// OPEN off for the whole mount, so this file cannot rely on Open (nor ask
// for direct I/O). Instead the file reports a fresh mtime with an attribute
// timeout of 1 ns (0 would mean the mount's default): a read() more than a
// jiffy after the last one revalidates, sees the change and drops the
// cached pages (auto_inval_data), so its read from offset 0 reaches the
// server. And dropDelay after the last read the server drops them itself
// (NotifyContent), for kernels that do not revalidate. Not at once: pages
// dropped before the reader copied them would be read again, from offset 0,
// materialising again. Readers that must reach the server every time open
// the file with O_DIRECT, which FUSE serves without the page cache
// (gds.ReadManifestFile and examples/gds/loader.py do).
type extentsFile struct {
	gofs.Inode
	sd   *shardDir
	sh   *sample.Shard
	size int64 // of the manifest, as computed at lookup

	mu   sync.Mutex
	data []byte      // guarded by mu: the manifest last materialised; nil before the first
	drop *time.Timer // guarded by mu; armed after each read
}

// dropDelay is how long after a read of _extents.tsv its pages are
// dropped.
const dropDelay = 20 * time.Millisecond

// expireAtOnce is the shortest attribute timeout go-fuse passes on (it
// replaces 0 by the mount's default).
const expireAtOnce = time.Nanosecond

var _ = (gofs.NodeGetattrer)((*extentsFile)(nil))
var _ = (gofs.NodeOpener)((*extentsFile)(nil))
var _ = (gofs.NodeReader)((*extentsFile)(nil))

func (d *shardDir) lookupExtents(ctx context.Context, sh *sample.Shard, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	r := d.vd.root
	data, err := r.opts.Extents.Manifest(ctx, sh, false)
	if err != nil {
		return nil, toErrno(r.log, "extents", d.path()+"/"+r.extentsName(), err)
	}
	f := &extentsFile{sd: d, sh: sh, size: int64(len(data))}
	f.attr(&out.Attr)
	out.SetEntryTimeout(r.opts.Immutable)
	out.SetAttrTimeout(expireAtOnce)
	return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino(kindExtents, d.vd.info.Version, int64(d.k))}), 0
}

func (f *extentsFile) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o444
	a.Size = uint64(f.size)
	a.Nlink = 1
	setTime(a, time.Now())
}

// Getattr implements gofs.NodeGetattrer.
func (f *extentsFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	out.SetTimeout(expireAtOnce)
	return 0
}

// Open implements gofs.NodeOpener (see sampleFile.Open).
func (f *extentsFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return openReadOnly(flags)
}

// Read implements gofs.NodeReader: a read at offset 0, or the first read,
// materialises the shard first.
func (f *extentsFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.mu.Lock()
	data := f.data
	f.mu.Unlock()
	if off == 0 || data == nil {
		r := f.sd.vd.root
		path := f.sd.path() + "/" + r.extentsName()
		var err error
		if data, err = r.opts.Extents.Manifest(ctx, f.sh, true); err != nil {
			return nil, toErrno(r.log, "extents", path, err)
		}
		if int64(len(data)) != f.size {
			r.log.Error("I/O error: extent manifest's size differs from the one computed at lookup", "path", path, "size", len(data), "lookup", f.size)
			return nil, syscall.EIO
		}
	}
	// The timer's own goroutine notifies: notifying inside a request can
	// deadlock.
	f.mu.Lock()
	f.data = data
	if f.drop == nil {
		f.drop = time.AfterFunc(dropDelay, func() { f.NotifyContent(0, 0) })
	} else {
		f.drop.Reset(dropDelay)
	}
	f.mu.Unlock()
	if off >= int64(len(data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(data[off:min(int64(len(data)), off+int64(len(dest)))]), 0
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
