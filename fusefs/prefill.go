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
	ids []uint64 // node ids of samples of sh, in listing order
}

type prefiller struct {
	root   *Root
	budget int64
	jobs   chan prefillJob
	start  sync.Once // the pushing goroutine, started by the first listing

	used   atomic.Int64 // bytes pushed
	files  atomic.Int64 // files pushed
	missed atomic.Int64 // files not pushed: budget spent, queue full or kernel forgot them
}

// prefillQueue bounds the listings waiting to be pushed.
const prefillQueue = 256

func newPrefiller(r *Root, budget int64) *prefiller {
	return &prefiller{root: r, budget: budget, jobs: make(chan prefillJob, prefillQueue)}
}

// queue asks for the samples ids of sh to be pushed, without waiting (a
// full queue drops them: they are read as usual). It is called while
// serving a listing, so the server is serving: the goroutine it starts
// the first time ends when the server does (a Root that never served, or
// never listed, starts none).
func (p *prefiller) queue(sh *sample.Shard, ids []uint64) {
	if p == nil || len(ids) == 0 || p.used.Load() >= p.budget {
		return
	}
	s := p.root.server
	if s == nil {
		return
	}
	p.start.Do(func() {
		served := make(chan struct{})
		go func() { s.Wait(); close(served) }()
		go p.run(served)
	})
	select {
	case p.jobs <- prefillJob{sh: sh, ids: ids}:
	default:
		p.missed.Add(int64(len(ids)))
	}
}

// run pushes the queued listings until served is closed, which also
// cancels a read in flight (one stuck in storage must not outlive the
// mount).
func (p *prefiller) run(served <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-served
		cancel()
	}()
	var buf []byte
	for {
		var job prefillJob
		select {
		case <-ctx.Done():
			return
		case job = <-p.jobs:
		}
		// The reply carrying these entries may still be on its way to
		// the kernel: give it a moment before the first store.
		time.Sleep(time.Millisecond)
		for i, id := range job.ids {
			pos := job.sh.Local(int64(id & (maxItem - 1)))
			size := job.sh.Size(pos)
			if size <= 0 {
				continue
			}
			if p.used.Add(size) > p.budget {
				p.used.Add(-size)
				p.missed.Add(int64(len(job.ids) - i))
				break
			}
			if int64(cap(buf)) < size {
				buf = make([]byte, size)
			}
			n, err := job.sh.ReadAt(ctx, pos, buf[:size], 0)
			if ctx.Err() != nil {
				return
			}
			if err != nil || int64(n) != size {
				// The reader's own READ will meet the error and say it.
				p.used.Add(-size)
				p.missed.Add(1)
				continue
			}
			st := p.store(id, buf[:n])
			switch st {
			case fuse.OK:
				p.files.Add(1)
			case fuse.Status(syscall.ENODEV), fuse.Status(syscall.EBADF):
				return // unmounted
			default:
				p.used.Add(-size)
				p.missed.Add(1)
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
