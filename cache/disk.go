package cache

import (
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Names inside the cache directory. Everything deltafs writes lives under
// subdirName; a file there is the cache's own only if its name matches one of
// the patterns below, and the cache never deletes any other file.
const (
	subdirName  = "deltafs-cache-v1"
	entrySuffix = ".dfc"      // <64 hex>.dfc inside shard <first 2 hex>/
	tempPrefix  = "tmp."      // tmp.<pid>.<16 hex>: a write in progress (or of a dead writer)
	metaName    = "meta.json" // informational: the last opener's budget, for `deltafs cache stats`
)

// diskEntry is one entry file as this process knows it.
type diskEntry struct {
	name    string // 64 hex characters
	size    int64  // file size, what the entry costs the budget
	atime   int64  // last access known to this process, Unix ns: the LRU order
	touched int64  // the file's mtime as last set or seen, Unix ns
	added   int64  // when this process put it into the index, Unix ns
	idx     int    // position in lruHeap
}

// lruHeap is a min-heap of entries by atime: the root is the least recently
// used entry. A heap rather than a list because entries found by a scan come
// with old recencies that must be inserted in order.
type lruHeap []*diskEntry

func (h lruHeap) Len() int           { return len(h) }
func (h lruHeap) Less(i, j int) bool { return h[i].atime < h[j].atime }
func (h lruHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *lruHeap) Push(x any)        { e := x.(*diskEntry); e.idx = len(*h); *h = append(*h, e) }
func (h *lruHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.idx = -1
	return e
}

// diskTier is the persistent tier: one file per entry under root.
//
// Locking: mu guards the index (entries, lru, bytes, reserved, lastScan) and
// nothing else. It is a leaf lock: no file I/O, no logging and no other lock
// is taken while it is held. File operations race with other goroutines and
// other processes by design; every one of them tolerates the file having been
// removed or replaced meanwhile (see the package documentation).
type diskTier struct {
	root        string // absolute <Dir>/deltafs-cache-v1
	budget      int64
	minFree     float64
	touchEvery  time.Duration
	staleTemp   time.Duration
	rescanEvery time.Duration
	space       func(path string) (avail, total uint64, err error)
	now         func() time.Time
	log         *slog.Logger
	ctr         *counters
	pid         int
	fsync       bool

	mu struct {
		sync.Mutex
		entries  map[string]*diskEntry // by name
		lru      lruHeap               // the same entries, least recently used first
		bytes    int64                 // sum of entries' sizes
		reserved int64                 // bytes of writes in progress in this process
		lastScan time.Time
	}

	kick chan struct{} // asks the scanner goroutine for a rescan; never blocks the sender
	done chan struct{} // closed by close
	wg   sync.WaitGroup
}

func openDisk(dir string, o *Options, ctr *counters, log *slog.Logger) (*diskTier, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &DirError{Dir: dir, Err: err}
	}
	d := &diskTier{
		root:        filepath.Join(abs, subdirName),
		budget:      o.DiskBytes,
		minFree:     o.MinFreeFraction,
		touchEvery:  o.TouchInterval,
		staleTemp:   o.StaleTempAge,
		rescanEvery: o.RescanInterval,
		space:       o.diskSpace,
		now:         o.now,
		log:         log,
		ctr:         ctr,
		pid:         os.Getpid(),
		fsync:       !o.SkipFsync,
		kick:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	d.mu.entries = make(map[string]*diskEntry)
	for i := 0; i < 256; i++ {
		if err := os.MkdirAll(d.shardDir(i), 0o755); err != nil {
			return nil, &DirError{Dir: d.root, Err: err}
		}
	}
	// Writing meta.json is also the check that the directory takes
	// writes: a cache that cannot write would serve nothing, silently.
	// A full disk is not refused (the cache then just stores nothing).
	if err := writeMeta(d.root, meta{Format: formatVersion, DiskBytes: d.budget, MinFreeFraction: d.minFree, PID: d.pid, Written: d.now().UTC()}); err != nil {
		if errors.Is(err, fs.ErrPermission) || isReadOnlyFS(err) {
			return nil, &DirError{Dir: d.root, Err: fmt.Errorf("not writable: %w", err)}
		}
		log.Warn("cache: cannot record the budget", "dir", d.root, "err", err)
	}
	d.rescan()
	d.wg.Add(1)
	go d.scanner()
	return d, nil
}

// DirError is a disk cache directory that cannot be used: it cannot be
// created, or does not take writes.
type DirError struct {
	Dir string // the directory at fault
	Err error
}

func (e *DirError) Error() string { return "cache directory " + e.Dir + ": " + e.Err.Error() }

func (e *DirError) Unwrap() error { return e.Err }

func (d *diskTier) shardDir(i int) string {
	return filepath.Join(d.root, fmt.Sprintf("%02x", i))
}

func (d *diskTier) path(name string) string {
	return filepath.Join(d.root, name[:2], name+entrySuffix)
}

func (d *diskTier) close() {
	close(d.done)
	d.wg.Wait()
}

// get returns the verified payload of r's entry.
func (d *diskTier) get(r ref) ([]byte, bool) {
	p := d.path(r.name)
	payload, _, size, err := readEntry(p, r.text)
	if err != nil {
		d.readFailed(r, p, err)
		return nil, false
	}
	d.touch(r.name, p, size)
	return payload, true
}

// locate verifies r's entry and returns where its payload lies.
func (d *diskTier) locate(r ref) (path string, off, n int64, ok bool) {
	p := d.path(r.name)
	payload, hdrLen, size, err := readEntry(p, r.text)
	if err != nil {
		d.readFailed(r, p, err)
		return "", 0, 0, false
	}
	d.touch(r.name, p, size)
	return p, hdrLen, int64(len(payload)), true
}

// readFailed handles an entry that could not be read: it is forgotten, and
// deleted if it is corrupt.
func (d *diskTier) readFailed(r ref, p string, err error) {
	var ce *corruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Never written, or evicted (perhaps by another process).
	case errors.As(err, &ce):
		d.ctr.corrupt.Add(1)
		d.log.Warn("cache: dropping corrupt entry", "entry", p, "reason", ce.reason)
		d.log.Debug("cache: corrupt entry's key", "entry", p, "key", r.text)
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			d.log.Warn("cache: cannot remove corrupt entry", "entry", p, "err", rerr)
		}
	case errors.Is(err, errKeyMismatch):
		d.log.Warn("cache: entry holds another key (hash collision?); treating as a miss", "entry", p)
		d.log.Debug("cache: entry holds another key", "entry", p, "key", r.text, "err", err)
	default:
		d.log.Warn("cache: cannot read entry; treating as a miss", "entry", p, "err", err)
	}
	d.mu.Lock()
	if e := d.mu.entries[r.name]; e != nil {
		d.forgetLocked(e)
	}
	d.mu.Unlock()
}

// touch records an access: the entry becomes the most recently used, and its
// file's times are set to now if they were last set more than touchEvery ago.
func (d *diskTier) touch(name, p string, size int64) {
	now := d.now()
	ns := now.UnixNano()
	d.mu.Lock()
	e := d.mu.entries[name]
	if e == nil {
		// Written by another process since our last scan.
		e = &diskEntry{name: name, size: size, atime: ns, added: ns}
		d.mu.entries[name] = e
		heap.Push(&d.mu.lru, e)
		d.mu.bytes += size
	} else {
		e.atime = ns
		heap.Fix(&d.mu.lru, e.idx)
		d.mu.bytes += size - e.size
		e.size = size
	}
	setTimes := ns-e.touched >= int64(d.touchEvery)
	if setTimes {
		e.touched = ns
	}
	d.mu.Unlock()
	if setTimes {
		if err := os.Chtimes(p, now, now); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Debug("cache: cannot set entry times", "entry", p, "err", err)
		}
	}
}

// store writes r's entry, evicting least recently used entries first so that
// the budget and the free-space floor hold. It never fails the caller: a
// payload that cannot be stored is only counted and logged.
func (d *diskTier) store(r ref, payload []byte) {
	size := entryFileSize(len(r.text), int64(len(payload)))
	if size > d.budget {
		d.ctr.bypassed.Add(1)
		d.log.Debug("cache: entry larger than the disk budget; not stored", "key", r.text, "bytes", size, "budget", d.budget)
		return
	}
	// Bytes to free so that at least minFree of the filesystem stays free
	// after this write.
	var floorNeed int64
	if d.minFree > 0 {
		if avail, total, err := d.space(d.root); err == nil {
			floorNeed = int64(d.minFree*float64(total)) - (int64(avail) - size)
		}
	}
	now := d.now()
	d.mu.Lock()
	if old := d.mu.entries[r.name]; old != nil {
		// Replaced by the rename below (another process wrote it, or it was
		// unreadable): its bytes come back.
		d.forgetLocked(old)
	}
	toFree := max(d.mu.bytes+d.mu.reserved+size-d.budget, floorNeed)
	if toFree > d.mu.bytes {
		// Evicting everything would not make room: the filesystem is full of
		// other data, or concurrent writes hold the budget. Keep what we have.
		d.mu.Unlock()
		d.ctr.floorSkips.Add(1)
		d.log.Debug("cache: no room for entry; not stored", "key", r.text, "bytes", size, "free_space_shortfall", floorNeed)
		return
	}
	victims := d.popVictimsLocked(toFree)
	d.mu.reserved += size
	scanDue := len(victims) > 0 && now.Sub(d.mu.lastScan) >= d.rescanEvery
	d.mu.Unlock()

	d.remove(victims)
	if scanDue {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	err := d.writeFile(r, payload, now)

	d.mu.Lock()
	d.mu.reserved -= size
	if err == nil {
		if old := d.mu.entries[r.name]; old != nil {
			d.forgetLocked(old)
		}
		ns := d.now().UnixNano()
		e := &diskEntry{name: r.name, size: size, atime: ns, touched: ns, added: ns}
		d.mu.entries[r.name] = e
		heap.Push(&d.mu.lru, e)
		d.mu.bytes += size
	}
	d.mu.Unlock()
	if err != nil {
		d.ctr.diskWriteErrors.Add(1)
		d.log.Warn("cache: cannot write entry", "entry", d.path(r.name), "err", err)
		d.log.Debug("cache: entry not written", "key", r.text)
		return
	}
	d.ctr.diskWrites.Add(1)
}

var zeroBlock [blockSize]byte

// writeFile writes the entry atomically: a temp file in the entry's shard
// directory, fsync, rename over the final name.
func (d *diskTier) writeFile(r ref, payload []byte, now time.Time) (err error) {
	dir := filepath.Join(d.root, r.name[:2])
	tmp := filepath.Join(dir, tempPrefix+strconv.Itoa(d.pid)+"."+fmt.Sprintf("%016x", rand.Uint64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// The shard directory was removed (deltafs cache clear): recreate it.
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(encodeHeader(r.text, payload, now.UnixNano())); err != nil {
		return err
	}
	if _, err = f.Write(payload); err != nil {
		return err
	}
	if pad := roundUp(int64(len(payload)), blockSize) - int64(len(payload)); pad > 0 {
		if _, err = f.Write(zeroBlock[:pad]); err != nil {
			return err
		}
	}
	if d.fsync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	// The file's mtime is the entry's recency for the next scan; make it the
	// same clock reading the index uses.
	if err = os.Chtimes(tmp, now, now); err != nil {
		return err
	}
	return os.Rename(tmp, d.path(r.name))
}

// forgetLocked drops e from the index. Call with mu held.
func (d *diskTier) forgetLocked(e *diskEntry) {
	delete(d.mu.entries, e.name)
	heap.Remove(&d.mu.lru, e.idx)
	d.mu.bytes -= e.size
}

// popVictimsLocked drops least recently used entries from the index until
// at least toFree bytes are dropped or the index is empty, and returns them
// for remove. Call with mu held.
func (d *diskTier) popVictimsLocked(toFree int64) []*diskEntry {
	var victims []*diskEntry
	for freed := int64(0); freed < toFree && len(d.mu.lru) > 0; {
		e := heap.Pop(&d.mu.lru).(*diskEntry)
		delete(d.mu.entries, e.name)
		d.mu.bytes -= e.size
		freed += e.size
		victims = append(victims, e)
	}
	return victims
}

// remove deletes evicted entries' files. A file that is already gone was
// evicted by another process; one that is open elsewhere stays readable
// through its open descriptors.
func (d *diskTier) remove(victims []*diskEntry) {
	for _, e := range victims {
		if err := os.Remove(d.path(e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("cache: cannot evict entry", "entry", d.path(e.name), "err", err)
			continue
		}
		d.ctr.diskEvictions.Add(1)
		d.ctr.diskEvictedBytes.Add(uint64(e.size))
	}
}

// scanner rescans the directory when a store asks for it.
func (d *diskTier) scanner() {
	defer d.wg.Done()
	for {
		select {
		case <-d.done:
			return
		case <-d.kick:
			d.rescan()
		}
	}
}

// rescan reconciles the index with the directory: entries other processes
// wrote are added with their file times as recency, entries other processes
// evicted are dropped, and then the budget is enforced on the result.
func (d *diskTier) rescan() {
	start := d.now()
	files := d.scan()
	d.mu.Lock()
	d.mu.lastScan = start
	for name, e := range d.mu.entries {
		if _, ok := files[name]; !ok && e.added < start.UnixNano() {
			d.forgetLocked(e)
		}
	}
	for name, f := range files {
		if e := d.mu.entries[name]; e != nil {
			d.mu.bytes += f.size - e.size
			e.size = f.size
			continue
		}
		e := &diskEntry{name: name, size: f.size, atime: f.mtime, touched: f.mtime, added: start.UnixNano()}
		d.mu.entries[name] = e
		heap.Push(&d.mu.lru, e)
		d.mu.bytes += f.size
	}
	var victims []*diskEntry
	if over := d.mu.bytes + d.mu.reserved - d.budget; over > 0 {
		victims = d.popVictimsLocked(over)
	}
	d.mu.Unlock()
	d.remove(victims)
}

type scannedFile struct{ size, mtime int64 }

// scan lists the entry files, removing on the way temp files of dead
// writers and entry files whose size alone shows they are broken. Shards
// are listed in parallel (one lstat per entry dominates).
func (d *diskTier) scan() map[string]scannedFile {
	now := d.now()
	d.cleanTemps(d.root, now)
	type named struct {
		name string
		f    scannedFile
	}
	shards := make(chan int, 256)
	for i := range 256 {
		shards <- i
	}
	close(shards)
	results := make(chan []named, 256)
	workers := min(runtime.GOMAXPROCS(0), 8)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range shards {
				var out []named
				d.scanShard(i, now, func(name string, f scannedFile) { out = append(out, named{name, f}) })
				results <- out
			}
		}()
	}
	wg.Wait()
	close(results)
	files := make(map[string]scannedFile)
	for out := range results {
		for _, n := range out {
			files[n.name] = n.f
		}
	}
	return files
}

func (d *diskTier) scanShard(i int, now time.Time, found func(name string, f scannedFile)) {
	dir := d.shardDir(i)
	des, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("cache: cannot list shard", "dir", dir, "err", err)
		}
		return
	}
	shard := filepath.Base(dir)
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() {
			continue // not ours
		}
		switch {
		case isEntryName(name) && name[:2] == shard:
			info, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			if sz := info.Size(); sz < blockSize || sz%blockSize != 0 {
				p := filepath.Join(dir, name)
				d.ctr.corrupt.Add(1)
				d.log.Warn("cache: dropping corrupt entry", "entry", p, "reason", fmt.Sprintf("file size %d is not a positive multiple of 4 KiB", sz))
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					d.log.Warn("cache: cannot remove corrupt entry", "entry", p, "err", err)
				}
				continue
			}
			found(strings.TrimSuffix(name, entrySuffix), scannedFile{size: info.Size(), mtime: info.ModTime().UnixNano()})
		case isTempName(name):
			d.cleanTemp(dir, de, now)
		}
	}
}

func (d *diskTier) cleanTemps(dir string, now time.Time) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.Type().IsRegular() && isTempName(de.Name()) {
			d.cleanTemp(dir, de, now)
		}
	}
}

// cleanTemp removes a temp file if its writer is dead (no such pid), or if
// it is older than staleTemp whoever the pid is (the pid may have been
// reused, or belong to another pid namespace). Removing a temp file a live
// writer still uses only makes that writer's rename fail: it logs and goes on.
func (d *diskTier) cleanTemp(dir string, de fs.DirEntry, now time.Time) {
	info, err := de.Info()
	if err != nil {
		return
	}
	pid, _ := tempPID(de.Name())
	if pidAlive(pid) && now.Sub(info.ModTime()) < d.staleTemp {
		return
	}
	p := filepath.Join(dir, de.Name())
	if err := os.Remove(p); err == nil {
		d.log.Info("cache: removed stale temp file", "file", p, "writer_pid", pid)
	}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isEntryName matches <64 lowercase hex>.dfc.
func isEntryName(name string) bool {
	return len(name) == 64+len(entrySuffix) && strings.HasSuffix(name, entrySuffix) && isHex(name[:64])
}

// isTempName matches tmp.<decimal pid>.<16 lowercase hex>.
func isTempName(name string) bool {
	_, ok := tempPID(name)
	return ok
}

func tempPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return 0, false
	}
	pidText, suffix, ok := strings.Cut(rest, ".")
	if !ok || len(suffix) != 16 || !isHex(suffix) || pidText == "" || len(pidText) > 10 {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != pidText {
		return 0, false
	}
	return pid, true
}

// usage is what the index holds.
func (d *diskTier) usage() (entries, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(len(d.mu.entries)), d.mu.bytes
}
