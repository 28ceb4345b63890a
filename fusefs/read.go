package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/deltafs/deltafs/sample"
)

// Read implements fuse.RawFileSystem: a sample's bytes come from the sample
// layer (one Parquet page, or a cached rendering); the small files from
// memory; _samples.tsv is generated from the shard's index for the range
// asked.
func (r *Root) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n, ok := r.decode(in.NodeId)
	if !ok {
		return nil, fuse.ENOENT
	}
	ctx := requestCtx(cancel, &in.InHeader)
	off := int64(in.Offset)
	dest := buf[:min(len(buf), int(in.Size))]
	switch n.kind {
	case kindSample:
		start := time.Now()
		r.ctr.SampleReads.Add(1)
		sh, pos, errno := r.sampleAt(ctx, n)
		if errno != 0 {
			return nil, status(errno)
		}
		got, err := sh.ReadAt(ctx, pos, dest, off)
		r.readLatency.Observe(time.Since(start))
		if err != nil {
			return nil, status(errnoFor(ctx, r.log, "read", sh.String()+" "+sh.Path(pos), err))
		}
		return fuse.ReadResultData(dest[:got]), fuse.OK
	case kindCommit, kindSchema:
		ver, errno := r.sampleVersion(ctx, n.version)
		if errno != 0 {
			return nil, status(errno)
		}
		data := ver.CommitJSON()
		if n.kind == kindSchema {
			data = ver.SchemaJSON()
		}
		return fuse.ReadResultData(slice(data, off, len(dest))), fuse.OK
	case kindSampleList:
		sh, errno := r.shard(ctx, n.version, int(n.item))
		if errno != 0 {
			return nil, status(errno)
		}
		got := sh.ListAt(dest, off)
		return fuse.ReadResultData(dest[:got]), fuse.OK
	case kindTar:
		sh, errno := r.shard(ctx, n.version, int(n.item))
		if errno != 0 {
			return nil, status(errno)
		}
		start := time.Now()
		got, err := sh.Tar().ReadAt(ctx, dest, off)
		r.readLatency.Observe(time.Since(start))
		if err != nil {
			return nil, status(errnoFor(ctx, r.log, "read", shardPath(n.version, int(n.item))+sample.TarExt, err))
		}
		return fuse.ReadResultData(dest[:got]), fuse.OK
	case kindStats:
		return fuse.ReadResultData(r.stats.read(dest, off)), fuse.OK
	case kindExtents:
		f, errno := r.extentsFile(ctx, n)
		if errno != 0 {
			return nil, status(errno)
		}
		data, errno := f.read(ctx, off)
		if errno != 0 {
			return nil, status(errno)
		}
		return fuse.ReadResultData(slice(data, off, len(dest))), fuse.OK
	}
	return nil, fuse.EISDIR
}

// slice is data[off:off+n], clipped.
func slice(data []byte, off int64, n int) []byte {
	if off >= int64(len(data)) {
		return nil
	}
	return data[off:min(int64(len(data)), off+int64(n))]
}
