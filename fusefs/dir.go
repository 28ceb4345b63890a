package fusefs

import (
	"context"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// Listing directories. A listing is generated from the version list or
// the shard's index, entry by entry, from the offset the kernel asks
// (entry i has offset i+1, "." and ".." first): nothing is kept per open
// directory, and a listing of millions of samples costs no memory beyond
// the index. Directories under version/N never change: they are opened
// with FOPEN_CACHE_DIR, so the kernel keeps the listing and a second `ls`
// costs no request.
//
// READDIRPLUS gives each entry its attributes, which makes the kernel
// create an inode for it (about 1.1 KiB of kernel memory) and spares the
// first open of each file a LOOKUP. The mount does so while the kernel
// holds fewer than Options.KernelInodes of its inodes (Root.kernelInodes,
// counted from LOOKUP and READDIRPLUS answers less FORGETs); past that,
// entries go by name only (node id 0: the kernel makes no inode), so the
// kernel memory a listing takes is bounded by the option, not by the size
// of the directory.

// listing is what a directory lists: n entries (after "." and ".."),
// entry i generated on demand.
type listing struct {
	n     int
	entry func(i int) (name string, c node)
	// sh, when set, answers sample sizes without a lookup per entry.
	sh *sample.Shard
}

// list is the listing of directory n.
func (r *Root) list(ctx context.Context, n node) (listing, syscall.Errno) {
	switch n.kind {
	case kindRoot:
		names := []string{"version", "latest", "at", ".deltafs"}
		kinds := []nodeKind{kindVersions, kindLatest, kindAtDir, kindMetaDir}
		return listing{n: 4, entry: func(i int) (string, node) { return names[i], node{kind: kinds[i]} }}, 0
	case kindMetaDir:
		return listing{n: 1, entry: func(int) (string, node) { return "stats", node{kind: kindStats} }}, 0
	case kindAtDir:
		return listing{}, 0 // lookup-only
	case kindVersions:
		r.mu.RLock()
		vs := r.versions
		r.mu.RUnlock()
		var served []int64
		for _, v := range vs {
			if v.Version < maxVersion {
				served = append(served, v.Version)
			}
		}
		return listing{n: len(served), entry: func(i int) (string, node) {
			return strconv.FormatInt(served[i], 10), node{kind: kindVersion, version: served[i]}
		}}, 0
	}
	if !r.known(n.version) {
		return listing{}, syscall.ENOENT
	}
	v := n.version
	switch n.kind {
	case kindVersion:
		names := []string{"_commit.json", "_schema.json", "shard"}
		kinds := []nodeKind{kindCommit, kindSchema, kindShards}
		return listing{n: 3, entry: func(i int) (string, node) { return names[i], node{kind: kinds[i], version: v} }}, 0
	case kindShards:
		// The shard folders, then their tar views.
		k := r.opts.Samples.Shards()
		return listing{n: 2 * k, entry: func(i int) (string, node) {
			if i < k {
				return strconv.Itoa(i), node{kind: kindShard, version: v, item: int64(i)}
			}
			return strconv.Itoa(i-k) + sample.TarExt, node{kind: kindTar, version: v, item: int64(i - k)}
		}}, 0
	case kindShard:
		k := int(n.item)
		sh, errno := r.shard(ctx, v, k)
		if errno != 0 {
			return listing{}, errno
		}
		// The sample and extent lists, then the class folders or the samples.
		xn := r.extentsName()
		nm := 1
		if xn != "" {
			nm = 2
		}
		classes := sh.Classes()
		nc := len(classes)
		return listing{n: nm + nc + sh.RootLen(), sh: sh, entry: func(i int) (string, node) {
			switch {
			case i == 0:
				return sample.ListName, node{kind: kindSampleList, version: v, item: n.item}
			case i < nm:
				return xn, node{kind: kindExtents, version: v, item: n.item}
			case i-nm < nc:
				return classes[i-nm], node{kind: kindClass, version: v, item: classItem(k, i-nm)}
			}
			pos := sh.RootAt(i - nm - nc)
			return sh.Name(pos), node{kind: kindSample, version: v, item: sh.Global(pos)}
		}}, 0
	case kindClass:
		k, c := shardOfClass(n.item)
		sh, errno := r.shard(ctx, v, k)
		if errno != 0 {
			return listing{}, errno
		}
		if c >= len(sh.Classes()) {
			return listing{}, syscall.ENOENT
		}
		members := sh.Class(c)
		return listing{n: len(members), sh: sh, entry: func(i int) (string, node) {
			pos := int(members[i])
			return sh.Name(pos), node{kind: kindSample, version: v, item: sh.Global(pos)}
		}}, 0
	}
	return listing{}, syscall.ENOTDIR
}

// immutableDir reports whether directory n never changes (under
// version/N).
func immutableDir(n node) bool {
	switch n.kind {
	case kindVersion, kindShards, kindShard, kindClass:
		return true
	}
	return false
}

// OpenDir implements fuse.RawFileSystem: the directory's listing must be
// there (a shard's index is built here, failing with EIO when a data file
// it needs cannot be read).
func (r *Root) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	n, ok := r.decode(in.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	if _, errno := r.list(requestCtx(cancel, &in.InHeader), n); errno != 0 {
		return status(errno)
	}
	r.entered(n, node{})
	if immutableDir(n) {
		out.OpenFlags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return fuse.OK
}

// ReleaseDir implements fuse.RawFileSystem: nothing is kept per open
// directory.
func (r *Root) ReleaseDir(in *fuse.ReleaseIn) {}

// ReadDir implements fuse.RawFileSystem.
func (r *Root) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(cancel, in, out, false)
}

// ReadDirPlus implements fuse.RawFileSystem.
func (r *Root) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(cancel, in, out, true)
}

func (r *Root) readDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	n, ok := r.decode(in.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	ctx := requestCtx(cancel, &in.InHeader)
	l, errno := r.list(ctx, n)
	if errno != 0 {
		return status(errno)
	}
	self := in.NodeId
	mtime := r.versionTime(n.version)
	var pushed []uint64 // samples given a kernel inode, for the prefill
	defer func() {
		if l.sh != nil {
			r.prefill.queue(l.sh, pushed)
		}
	}()
	for i := int(in.Offset); i < l.n+2; i++ {
		var name string
		var c node
		mode := uint32(syscall.S_IFDIR)
		var id uint64
		switch i {
		case 0:
			name, id = ".", self
		case 1:
			name, id = "..", fuse.FUSE_ROOT_ID
		default:
			name, c = l.entry(i - 2)
			var fits bool
			if id, fits = r.ino(c.kind, c.version, c.item); !fits {
				continue
			}
			mode = c.kind.mode()
		}
		de := fuse.DirEntry{Name: name, Mode: mode, Ino: id, Off: uint64(i + 1)}
		if !plus {
			if !out.AddDirEntry(de) {
				break
			}
			r.ctr.Listed.Add(1)
			continue
		}
		e := out.AddDirLookupEntry(de)
		if e == nil {
			break
		}
		r.ctr.Listed.Add(1)
		// "." and "..", and entries past the kernel inode budget, go by
		// name only (node id 0).
		// A tar view's size needs its shard's index: listing the shards
		// must not build them all.
		if i < 2 || c.kind == kindTar || r.opts.KernelInodes < 0 || r.kernelInodes.Load() >= r.opts.KernelInodes {
			continue
		}
		var timeout = r.opts.Immutable
		if c.kind == kindSample && l.sh != nil {
			fileAttr(&e.Attr, l.sh.Size(l.sh.Local(c.item)), mtime)
		} else if timeout, errno = r.attr(ctx, c, &e.Attr); errno != 0 {
			*e = fuse.EntryOut{}
			continue
		}
		e.NodeId, e.Generation, e.Attr.Ino = id, 1, id
		e.SetEntryTimeout(r.entryTimeout(c, timeout))
		e.SetAttrTimeout(timeout)
		r.kernelInodes.Add(1)
		r.ctr.ListedPlus.Add(1)
		if c.kind == kindSample && r.prefill != nil {
			pushed = append(pushed, id)
		}
	}
	return fuse.OK
}

// mode is the file type of a kind's nodes.
func (kind nodeKind) mode() uint32 {
	switch kind {
	case kindLatest, kindAt:
		return syscall.S_IFLNK
	case kindStats, kindCommit, kindSchema, kindSampleList, kindSample, kindExtents, kindTar:
		return syscall.S_IFREG
	}
	return syscall.S_IFDIR
}
