package fusefs

import (
	"context"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// What statfs(2) reports on a mount (every node answers alike): a
// read-only filesystem that is full.
//
//	f_bsize, f_frsize  4096
//	f_namelen          255 (sample names are cut to fit, see package sample)
//	f_blocks           the latest version's live data files' bytes, in 4 KiB blocks
//	f_bfree, f_bavail  0: nothing can be written
//	f_files            the latest version's live rows (samples); 0 when the log does not say
//	f_ffree            0
//
// Sizes come from the log (the data files' sizes as committed), not from the
// sample files, whose sizes are only known once their shard is indexed; so
// `df` shows what the table holds. A statfs costs no storage read when
// the latest version's snapshot is built (it is, from the mount on, and
// for each new version as soon as anything looks at it); otherwise it
// waits for it up to statfsWait and else answers the previous version's
// figures (zeros before any).
const (
	statfsBlock   = 4096
	statfsNameMax = 255
	statfsWait    = 2 * time.Second
)

// StatFs implements fuse.RawFileSystem.
func (r *Root) StatFs(cancel <-chan struct{}, in *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	bytes, rows := r.usage.get(requestCtx(cancel, in), r)
	*out = fuse.StatfsOut{
		Blocks:  (bytes + statfsBlock - 1) / statfsBlock,
		Files:   rows,
		Bsize:   statfsBlock,
		Frsize:  statfsBlock,
		NameLen: statfsNameMax,
	}
	return fuse.OK
}

// usageCache holds the latest version's size for Statfs, computed once
// per version in the background.
type usageCache struct {
	mu      sync.Mutex
	version int64 // guarded by mu; the version bytes and rows describe; 0 with none (see ok)
	ok      bool  // guarded by mu; bytes and rows are set
	bytes   uint64
	rows    uint64
	running chan struct{} // guarded by mu; closed when the running computation ends; nil: none runs
}

// get returns the latest version's data bytes and live rows, waiting at
// most statfsWait (or until ctx ends) for them to be computed.
func (u *usageCache) get(ctx context.Context, r *Root) (bytes, rows uint64) {
	r.mu.RLock()
	latest := r.latest
	r.mu.RUnlock()
	u.mu.Lock()
	if latest < 0 || u.ok && u.version == latest {
		bytes, rows = u.bytes, u.rows
		u.mu.Unlock()
		return bytes, rows
	}
	done := u.running
	if done == nil {
		done = make(chan struct{})
		u.running = done
		go u.compute(r, latest, done)
	}
	u.mu.Unlock()
	t := time.NewTimer(statfsWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bytes, u.rows
}

// compute sums version v's live data files and rows, and keeps them
// unless a later version was computed meanwhile.
func (u *usageCache) compute(r *Root, v int64, done chan struct{}) {
	defer func() {
		u.mu.Lock()
		u.running = nil
		u.mu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), max(r.opts.Refresh*5, 30*time.Second))
	defer cancel()
	ver, err := r.opts.Samples.Version(ctx, v)
	if err != nil {
		r.log.Debug("statfs: the latest version's size is unknown", "version", v, "err", err)
		return
	}
	snap := ver.Snapshot()
	var bytes uint64
	for _, f := range snap.Files {
		bytes += uint64(max(f.Size, 0))
	}
	rows := uint64(max(snap.NumRows(), 0))
	u.mu.Lock()
	if !u.ok || v >= u.version {
		u.version, u.ok, u.bytes, u.rows = v, true, bytes, rows
	}
	u.mu.Unlock()
}
