package fusefs

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// Extents says where samples' bytes lie in the disk cache (package
// cache/materialize implements it). fs only presents what it returns: the
// extent xattr on sample files and the per-shard extent list.
type Extents interface {
	// XattrName is the sample files' extent attribute.
	XattrName() string
	// Xattr is that attribute's value for the sample at pos, materialising
	// the sample in the disk cache if needed.
	Xattr(ctx context.Context, sh *sample.Shard, pos int) ([]byte, error)
	// ListName is the per-shard extent list's file name.
	ListName() string
	// List is its content. materialize false only computes its shape
	// without I/O, for the size (its checksums are unknown); true first
	// makes sure every sample of the shard is in the disk cache, whole,
	// and lists the checksums of the bytes there. Both have the same
	// length: the content changes, the size the kernel learnt at lookup
	// does not.
	List(ctx context.Context, sh *sample.Shard, materialize bool) ([]byte, error)
}

// extentsName is the extent list's name, "" without Options.Extents.
func (r *Root) extentsName() string {
	if r.opts.Extents == nil {
		return ""
	}
	return r.opts.Extents.ListName()
}

// xattrs reports whether sample files serve the extent attribute.
func (r *Root) xattrs() bool { return r.opts.Xattrs && r.opts.Extents != nil }

// extentsFile is version/N/shard/K/_extents.tsv. Its size is computed at
// lookup without I/O (an extent's place depends only on the sample, and its
// checksum field has a fixed width); every read at offset 0 materialises the
// shard's samples in the disk cache again (re-writing evicted or broken
// ones) and serves that list, with the checksums of the bytes now in
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
// (extents.ReadListFile and examples/gds/loader.py do).
type extentsFile struct {
	root *Root
	id   uint64 // its node id
	n    node   // which shard (the shard itself is looked up at each read:
	// keeping it here would keep its version's index alive)
	path string
	size int64 // of the extent list, as computed at lookup

	mu   sync.Mutex
	data []byte      // guarded by mu: the extent list last materialised; nil before the first
	drop *time.Timer // guarded by mu; armed after each read
}

// dropDelay is how long after a read of _extents.tsv its pages are
// dropped.
const dropDelay = 20 * time.Millisecond

// extentsFile returns the state of node n's _extents.tsv, computing its
// size (without I/O) on first use.
func (r *Root) extentsFile(ctx context.Context, n node) (*extentsFile, syscall.Errno) {
	if r.opts.Extents == nil {
		return nil, syscall.ENOENT
	}
	id := r.mustIno(n.kind, n.version, n.item)
	if f, ok := r.extents.Load(id); ok {
		return f.(*extentsFile), 0
	}
	sh, errno := r.shard(ctx, n.version, int(n.item))
	if errno != 0 {
		return nil, errno
	}
	path := shardPath(n.version, int(n.item)) + "/" + r.extentsName()
	data, err := r.opts.Extents.List(ctx, sh, false)
	if err != nil {
		return nil, errnoFor(ctx, r.log, "extents", path, err)
	}
	f, _ := r.extents.LoadOrStore(id, &extentsFile{root: r, id: id, n: n, path: path, size: int64(len(data))})
	return f.(*extentsFile), 0
}

// read returns the extent list to serve a read at off: materialised afresh at
// offset 0, or when none was yet.
func (f *extentsFile) read(ctx context.Context, off int64) ([]byte, syscall.Errno) {
	f.mu.Lock()
	data := f.data
	f.mu.Unlock()
	r := f.root
	if off == 0 || data == nil {
		sh, errno := r.shard(ctx, f.n.version, int(f.n.item))
		if errno != 0 {
			return nil, errno
		}
		var err error
		if data, err = r.opts.Extents.List(ctx, sh, true); err != nil {
			return nil, errnoFor(ctx, r.log, "extents", f.path, err)
		}
		if int64(len(data)) != f.size {
			r.log.Error("I/O error: extent list's size differs from the one computed at lookup", "path", f.path, "size", len(data), "lookup", f.size)
			return nil, syscall.EIO
		}
	}
	// The timer's own goroutine notifies: notifying inside a request can
	// deadlock.
	f.mu.Lock()
	f.data = data
	if f.drop == nil {
		f.drop = time.AfterFunc(dropDelay, func() {
			if s := r.server; s != nil {
				s.InodeNotify(f.id, 0, 0)
			}
		})
	} else {
		f.drop.Reset(dropDelay)
	}
	f.mu.Unlock()
	return data, 0
}

// GetXAttr implements fuse.RawFileSystem: the extent attribute of sample
// files, which materialises the sample in the disk cache. Only reached
// with --xattrs (otherwise the mount disables xattrs and the kernel never
// asks).
func (r *Root) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	n, ok := r.decode(h.NodeId)
	if !ok || n.kind != kindSample || !r.xattrs() || attr != r.opts.Extents.XattrName() {
		return 0, fuse.ENOATTR
	}
	ctx := requestCtx(cancel, h)
	sh, pos, errno := r.sampleAt(ctx, n)
	if errno != 0 {
		return 0, status(errno)
	}
	v, err := r.opts.Extents.Xattr(ctx, sh, pos)
	if err != nil {
		return 0, status(errnoFor(ctx, r.log, "getxattr", sh.String()+" "+sh.Path(pos), err))
	}
	if len(dest) < len(v) {
		return uint32(len(v)), fuse.ERANGE
	}
	return uint32(copy(dest, v)), fuse.OK
}

// ListXAttr implements fuse.RawFileSystem.
func (r *Root) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	n, ok := r.decode(h.NodeId)
	if !ok || n.kind != kindSample || !r.xattrs() {
		return 0, fuse.OK
	}
	list := r.opts.Extents.XattrName() + "\x00"
	if len(dest) < len(list) {
		return uint32(len(list)), fuse.ERANGE
	}
	return uint32(copy(dest, list)), fuse.OK
}
