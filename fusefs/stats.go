package fusefs

import (
	"encoding/json"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// statsFile is MOUNT/.deltafs/stats: counters as JSON, rendered afresh by
// every read from offset 0 and by every GETATTR. Its attribute timeout is
// a nanosecond (expireAtOnce), so a stat a kernel tick (1-10 ms) after the
// last sees a new mtime and the kernel drops its cached pages; a read
// within the same tick may be served the previous counters from the page
// cache. Because the kernel may read with a size it learnt earlier, the
// file reports a size with room to spare (twice the rendering, in 4 KiB
// units) and pads the JSON to it with spaces (still valid JSON).
type statsFile struct {
	root *Root

	mu   sync.Mutex
	data []byte // guarded by mu; the rendering being read
	size int64  // guarded by mu; the size last reported
}

// expireAtOnce is the shortest attribute timeout the kernel keeps (0
// would mean "the default" to some layers).
const expireAtOnce = time.Nanosecond

func (f *statsFile) render() []byte {
	var v any
	if f.root.opts.Stats != nil {
		v = f.root.opts.Stats()
	} else {
		v = f.root.DefaultStats()
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b = []byte(strconv.Quote(err.Error()))
	}
	return append(b, '\n')
}

func (f *statsFile) attr(a *fuse.Attr) {
	data := f.render()
	f.mu.Lock()
	if int64(len(data)) > f.size || f.size > 4*int64(len(data))+8192 {
		f.size = (2*int64(len(data))/4096 + 1) * 4096
	}
	f.data, a.Size = data, uint64(f.size)
	f.mu.Unlock()
	a.Mode = syscall.S_IFREG | 0o444
	a.Nlink = 1
	setTime(a, time.Now())
}

// read serves bytes [off, off+len(dest)), rendering afresh at offset 0.
func (f *statsFile) read(dest []byte, off int64) []byte {
	var fresh []byte
	if off == 0 {
		fresh = f.render()
	}
	f.mu.Lock()
	if f.size == 0 {
		f.size = (2*int64(len(fresh))/4096 + 1) * 4096
	}
	if fresh != nil && int64(len(fresh)) <= f.size {
		f.data = fresh
	}
	data, size := f.data, f.size
	f.mu.Unlock()
	if off >= size {
		return nil
	}
	end := min(size, off+int64(len(dest)))
	return pad(dest[:end-off], off, data, size)
}

// pad fills out, the bytes [off, off+len(out)) of a file of size bytes, from
// data and then spaces, ending the file with a newline.
func pad(out []byte, off int64, data []byte, size int64) []byte {
	n := 0
	if off < int64(len(data)) {
		n = copy(out, data[off:])
	}
	for i := n; i < len(out); i++ {
		out[i] = ' '
	}
	if off+int64(len(out)) == size && len(out) > 0 && size > int64(len(data)) {
		out[len(out)-1] = '\n'
	}
	return out
}

// DefaultStats are the sample layer's counters, the version listing's
// state and the requests the kernel sent.
func (r *Root) DefaultStats() map[string]any {
	c := r.opts.Samples.Counters()
	r.mu.RLock()
	latest, n, pollErr := r.latest, len(r.versions), r.pollErr
	r.mu.RUnlock()
	out := map[string]any{
		"versions": map[string]any{"count": n, "latest": latest},
		"index": map[string]any{
			"files":            c.FilesIndexed.Load(),
			"files_from_cache": c.FilesFromCache.Load(),
			"samples":          c.SamplesIndexed.Load(),
			"bytes":            c.IndexBytes.Load(),
			"bytes_per_sample": perSample(c.IndexBytes.Load(), c.SamplesIndexed.Load()),
			"build_seconds":    time.Duration(c.IndexNanos.Load()).Seconds(),
		},
		"reads": map[string]any{"samples": c.Reads.Load(), "errors": c.ReadErrors.Load(), "latency": r.readLatency.Latency()},
		"kernel": map[string]any{
			"inodes":        r.kernelInodes.Load(),
			"lookups":       r.ctr.Lookups.Load(),
			"listed":        r.ctr.Listed.Load(),
			"listed_inodes": r.ctr.ListedPlus.Load(),
			"ioctls":        r.ctr.Ioctls.Load(),
			"sample_reads":  r.ctr.SampleReads.Load(),
			"inode_budget":  r.opts.KernelInodes,
			"overlays":      r.Overlays(),
		},
		"prefill": r.PrefillStats(),
	}
	if pollErr != nil {
		out["versions"].(map[string]any)["error"] = pollErr.Error()
	}
	return out
}

func perSample(b, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}
