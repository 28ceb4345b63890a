// Command floor is the FUSE floor for deltafs's benchmarks: a minimal go-fuse
// server that serves N files of a fixed size from memory, with the same
// kernel options deltafs uses (zero-message open, long timeouts, cached
// listings, no xattrs, ioctls answered ENOTTY), and a `_samples.tsv` sample list naming them as
// deltafs's does, so that a reader finds the files the same way on both
// (by the sample list: a LOOKUP and a READ per file; by a listing: the
// listing's attributes, then a READ per file). A cold epoch over it is the
// fastest any FUSE filesystem can be on this machine; deltafs's cold epoch
// is measured against it.
//
//	floor -files 60000 -size 784 MOUNTPOINT
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type root struct {
	fs.Inode
	files   int
	data    []byte
	samples []byte // _samples.tsv, the sample list: name, size, class, id per line
}

type file struct {
	fs.Inode
	data []byte
}

var (
	_ = (fs.NodeLookuper)((*root)(nil))
	_ = (fs.NodeReaddirer)((*root)(nil))
	_ = (fs.NodeOpener)((*file)(nil))
	_ = (fs.NodeReader)((*file)(nil))
	_ = (fs.NodeGetattrer)((*file)(nil))
	_ = (fs.NodeFlusher)((*file)(nil))
	_ = (fs.NodeIoctler)((*file)(nil))
)

const hour = time.Hour

func name(i int) string { return fmt.Sprintf("%08d.bin", i) }

func (r *root) Lookup(ctx context.Context, n string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n == "_samples.tsv" {
		out.Attr.Mode = syscall.S_IFREG | 0o444
		out.Attr.Size = uint64(len(r.samples))
		out.SetEntryTimeout(hour)
		out.SetAttrTimeout(hour)
		return r.NewInode(ctx, &file{data: r.samples}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2}), 0
	}
	var i int
	if _, err := fmt.Sscanf(n, "%08d.bin", &i); err != nil || i < 0 || i >= r.files || name(i) != n {
		return nil, syscall.ENOENT
	}
	out.Attr.Mode = syscall.S_IFREG | 0o444
	out.Attr.Size = uint64(len(r.data))
	out.SetEntryTimeout(hour)
	out.SetAttrTimeout(hour)
	return r.NewInode(ctx, &file{data: r.data}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: uint64(i) + 16}), 0
}

func (r *root) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries := make([]fuse.DirEntry, r.files+1)
	entries[0] = fuse.DirEntry{Name: "_samples.tsv", Mode: syscall.S_IFREG, Ino: 2}
	for i := range r.files {
		entries[i+1] = fuse.DirEntry{Name: name(i), Mode: syscall.S_IFREG, Ino: uint64(i) + 16}
	}
	return fs.NewListDirStream(entries), 0
}

func (f *file) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(len(f.data))
	out.SetTimeout(hour)
	return 0
}

// Open and Flush return ENOSYS: the kernel then sends neither again.
func (f *file) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

func (f *file) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// Ioctl answers ENOTTY at once, as deltafs does (fusefs/nodes.go): Linux
// forwards every ioctl on a FUSE file, and CPython's open() asks isatty
// (TCGETS) of every file it opens buffered, so both servers must answer the
// same for the round trip to compare.
func (f *file) Ioctl(ctx context.Context, fh fs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	return 0, syscall.ENOTTY
}

func (f *file) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(f.data)))
	return fuse.ReadResultData(f.data[off:end]), 0
}

func main() {
	files := flag.Int("files", 60000, "number of files")
	size := flag.Int("size", 784, "bytes per file")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: floor [-files N] [-size B] MOUNTPOINT")
	}
	data := make([]byte, *size)
	for i := range data {
		data[i] = byte(i * 31)
	}
	var samples []byte
	for i := range *files {
		samples = fmt.Appendf(samples, "%s\t%d\t\t%08d\n", name(i), *size, i)
	}
	hourD := hour
	srv, err := fs.Mount(flag.Arg(0), &root{files: *files, data: data, samples: samples}, &fs.Options{
		EntryTimeout: &hourD, AttrTimeout: &hourD, NegativeTimeout: &hourD,
		MountOptions: fuse.MountOptions{FsName: "floor", Name: "floor", DisableXAttrs: true, MaxBackground: 64, Options: []string{"ro"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; _ = srv.Unmount() }()
	srv.Wait()
}
