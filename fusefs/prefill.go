package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/sample"
)

// Prefill: pages in the kernel before the reader asks.
//
// A listing with attributes (READDIRPLUS) makes the kernel create an
// inode for each sample it lists. The mount then pushes those samples'
// bytes into their page caches (FUSE_NOTIFY_STORE), in listing order, from
// the sample layer (the memory cache, the disk cache after a remount, or
// decoded pages in a first epoch), so that the reader's first read of
// each is a page-cache hit and sends no READ. Options.Prefill bounds the
// bytes pushed over the mount's life: the kernel may evict pushed pages
// (they are then read again, one READ each), and the mount cannot see
// that, so it never pushes past the budget and never pushes again. An
// entry the kernel has already forgotten is skipped and not counted.

// DefaultPrefill is Options.Prefill's default: an eighth of the machine's
// memory, at most 8 GiB.
func DefaultPrefill() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 256 << 20
	}
	return min(int64(si.Totalram)*int64(si.Unit)/8, 8<<30)
}

type prefillJob struct {
	sh  *sample.Shard
	ids []uint64  // node ids of samples of sh, in listing order
	at  time.Time // when the listing queued it
}

type prefiller struct {
	root   *Root
	budget int64
	start  sync.Once     // the pushing goroutines, started by the first listing
	wake   chan struct{} // a job was queued (capacity 1)

	mu       sync.Mutex
	pending  []prefillJob // guarded by mu; in listing order
	queued   int          // guarded by mu; ids in pending
	reserved int64        // guarded by mu; bytes pushed plus bytes pending

	used   atomic.Int64 // bytes pushed
	files  atomic.Int64 // files pushed
	missed atomic.Int64 // files not pushed: budget spent, queue full, a failed read, or the kernel forgot them
}

const (
	// prefillWorkers read and push listings side by side: a read from
	// the disk cache after a remount waits on the disk, and one reader
	// alone left the epoch's first files to READ.
	prefillWorkers = 4
	// prefillPending bounds the ids waiting to be pushed (8 bytes each):
	// listings faster than the pushing wait for it, up to this many.
	prefillPending = 1 << 22
	// prefillSettle is how long after its listing a job's first store
	// waits: the listing's reply may still be on its way to the kernel.
	prefillSettle = time.Millisecond
)

func newPrefiller(r *Root, budget int64) *prefiller {
	return &prefiller{root: r, budget: budget, wake: make(chan struct{}, 1)}
}

// queue asks for the samples ids of sh to be pushed, without waiting. The
// budget is reserved here, in listing order, so the bytes queued never
// pass it; ids past it, or past prefillPending, are dropped (they are
// read as usual). It is called while serving a listing, so the server is
// serving: the goroutines it starts the first time end when the server
// does (a Root that never served, or never listed, starts none).
func (p *prefiller) queue(sh *sample.Shard, ids []uint64) {
	if p == nil || len(ids) == 0 {
		return
	}
	s := p.root.server
	if s == nil {
		return
	}
	p.mu.Lock()
	kept := make([]uint64, 0, len(ids))
	for _, id := range ids {
		size := sh.Size(sh.Local(int64(id & (maxItem - 1))))
		if size <= 0 {
			continue
		}
		if p.reserved+size > p.budget || p.queued+len(kept) >= prefillPending {
			p.missed.Add(1) // an empty sample has nothing to push: not missed
			continue
		}
		p.reserved += size
		kept = append(kept, id)
	}
	if len(kept) > 0 {
		p.pending = append(p.pending, prefillJob{sh: sh, ids: kept, at: time.Now()})
		p.queued += len(kept)
	}
	p.mu.Unlock()
	if len(kept) == 0 {
		return
	}
	p.start.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		// A read in flight when the server ends is cancelled: one stuck
		// in storage must not outlive the mount.
		go func() { s.Wait(); cancel() }()
		for range prefillWorkers {
			go p.run(ctx)
		}
	})
	p.signal()
}

func (p *prefiller) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest job, waking another worker if more wait.
func (p *prefiller) pop() (prefillJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		p.pending = nil // let a drained backlog's array go
		return prefillJob{}, false
	}
	job := p.pending[0]
	p.pending[0] = prefillJob{}
	p.pending = p.pending[1:]
	p.queued -= len(job.ids)
	if len(p.pending) > 0 {
		p.signal()
	}
	return job, true
}

// unreserve gives back the budget of a sample not pushed.
func (p *prefiller) unreserve(size int64) {
	p.mu.Lock()
	p.reserved -= size
	p.mu.Unlock()
	p.missed.Add(1)
}

// run pushes queued listings until ctx ends.
func (p *prefiller) run(ctx context.Context) {
	var buf []byte
	for {
		job, ok := p.pop()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
			}
			continue
		}
		if d := time.Until(job.at.Add(prefillSettle)); d > 0 {
			time.Sleep(d)
		}
		for _, id := range job.ids {
			pos := job.sh.Local(int64(id & (maxItem - 1)))
			size := job.sh.Size(pos)
			if int64(cap(buf)) < size {
				buf = make([]byte, size)
			}
			n, err := job.sh.ReadAt(ctx, pos, buf[:size], 0)
			if ctx.Err() != nil {
				return
			}
			if err != nil || int64(n) != size {
				// The reader's own READ will meet the error and say it.
				p.unreserve(size)
				continue
			}
			switch p.store(id, buf[:n]) {
			case fuse.OK:
				p.used.Add(size)
				p.files.Add(1)
			case fuse.Status(syscall.ENODEV), fuse.Status(syscall.EBADF):
				return // unmounted
			default:
				p.unreserve(size)
			}
		}
	}
}

// store pushes data as the content of node id, retrying briefly while the
// kernel has not yet made the inode (the listing's reply in flight).
func (p *prefiller) store(id uint64, data []byte) fuse.Status {
	s := p.root.server
	if s == nil {
		return fuse.ENOENT
	}
	st := s.InodeNotifyStoreCache(id, 0, data)
	for try := 0; st == fuse.ENOENT && try < 3; try++ {
		time.Sleep(2 * time.Millisecond)
		st = s.InodeNotifyStoreCache(id, 0, data)
	}
	return st
}

// Prefilled returns the files and bytes the prefill pushed so far: reads
// the sample layer served (and counted) that no FUSE READ asked for.
func (r *Root) Prefilled() (files, bytes int64) {
	if p := r.prefill; p != nil {
		return p.files.Load(), p.used.Load()
	}
	return 0, 0
}

// PrefillStats are the prefill's counters: bytes and files pushed, files
// not pushed, and the budget.
func (r *Root) PrefillStats() map[string]any {
	p := r.prefill
	if p == nil {
		return map[string]any{"budget": 0}
	}
	files, bytes := r.Prefilled()
	return map[string]any{"budget": p.budget, "bytes": bytes, "files": files, "missed": p.missed.Load()}
}
