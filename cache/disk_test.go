package cache

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

// Payloads of 1000 bytes make 8 KiB entries (4 KiB header + one block).
const entry8K = 8192

// TestEvictionLRU: eviction goes least recently used first, by bytes, and an
// access (Get, Peek, Locate) refreshes recency.
func TestEvictionLRU(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	c := open(t, Options{Dir: dir, DiskBytes: 5 * entry8K, MinFreeFraction: -1, now: clk.now})
	var src source
	size := func(k Key) int {
		if k == key(7) {
			return 4 * 4096
		}
		return 1000
	}
	src.sizes = size
	get := func(i int) { mustGet(t, c, key(i), src.fetch(key(i)), payload(key(i), size(key(i)))) }
	present := func() []int {
		var out []int
		for i := range 20 {
			if exists(entryPath(c, key(i))) {
				out = append(out, i)
			}
		}
		return out
	}
	for i := range 5 {
		get(i)
	}
	get(0) // disk hit: 0 is now the most recent
	if _, ok := c.Peek(key(1)); !ok {
		t.Fatal("Peek missed")
	}
	if _, _, _, ok := c.Locate(key(2)); !ok {
		t.Fatal("Locate missed")
	}
	// Recency now, oldest first: 3 4 0 1 2.
	get(5)
	get(6)
	if got, want := fmt.Sprint(present()), "[0 1 2 5 6]"; got != want {
		t.Fatalf("present after two evictions: %s, want %s", got, want)
	}
	// A 16 KiB payload (20 KiB with its header) evicts the three oldest: 0 1 2.
	get(7)
	if got, want := fmt.Sprint(present()), "[5 6 7]"; got != want {
		t.Fatalf("present after a big entry: %s, want %s", got, want)
	}
	s := c.Stats()
	if s.DiskBytes > 5*entry8K || s.DiskEvictions != 5 || s.DiskEntries != 3 {
		t.Fatalf("stats: %+v", s)
	}
	if u, _ := DiskUsage(dir); u.Bytes != s.DiskBytes || u.Entries != 3 {
		t.Fatalf("on disk %+v, accounted %d bytes", u, s.DiskBytes)
	}
}

// TestByteBound: random sizes, many writes: the accounting and the directory
// never exceed the budget, and the accounting matches the directory.
func TestByteBound(t *testing.T) {
	dir := t.TempDir()
	const budget = 256 << 10
	c := open(t, Options{Dir: dir, DiskBytes: budget, MinFreeFraction: -1})
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := map[Key]int{}
	src := source{sizes: func(k Key) int { return sizes[k] }}
	for i := range 300 {
		k := key(rng.IntN(120))
		if _, ok := sizes[k]; !ok {
			sizes[k] = rng.IntN(40 << 10)
		}
		mustGet(t, c, k, src.fetch(k), payload(k, sizes[k]))
		if s := c.Stats(); s.DiskBytes > budget {
			t.Fatalf("step %d: %d bytes accounted, budget %d", i, s.DiskBytes, budget)
		}
	}
	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Stats()
	if u.Bytes > budget || u.Bytes != s.DiskBytes || u.Entries != s.DiskEntries || u.TempFiles != 0 {
		t.Fatalf("on disk %+v; stats %+v", u, s)
	}
	if s.DiskEvictions == 0 {
		t.Fatal("no evictions: the test does not exercise the bound")
	}
}

// TestPersistence: a new Cache on the same directory finds every entry (zero
// fetches) and keeps the recency order through file times.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	o := Options{MemBytes: 1 << 20, Dir: dir, DiskBytes: 10 * entry8K, MinFreeFraction: -1, TouchInterval: time.Nanosecond, now: clk.now}
	c1 := open(t, o)
	var src source
	for i := range 10 {
		mustGet(t, c1, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	c1.Close()
	// Touch 0..4 in a second process's lifetime, so 5..9 become the oldest.
	c2 := open(t, Options{Dir: dir, DiskBytes: 10 * entry8K, MinFreeFraction: -1, TouchInterval: time.Nanosecond, now: clk.now})
	for i := range 5 {
		mustGet(t, c2, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	if n := src.n.Load(); n != 10 {
		t.Fatalf("fetches after reopen: %d, want 10 (none new)", n)
	}
	c2.Close()

	c3 := open(t, o)
	if s := c3.Stats(); s.DiskEntries != 10 || s.DiskBytes != 10*entry8K {
		t.Fatalf("reopened index: %+v", s)
	}
	for i := range 10 {
		mustGet(t, c3, key(i), func(context.Context) ([]byte, error) {
			t.Errorf("fetch of cached key %d after reopen", i)
			return nil, fmt.Errorf("unexpected fetch")
		}, payload(key(i), 1000))
	}
	c3.Close()
	// Recency came back from mtimes: with a fresh process that has not read
	// anything, new entries evict 5, 6, 7 first (their last access is the
	// oldest), not 0.
	c4 := open(t, Options{Dir: dir, DiskBytes: 10 * entry8K, MinFreeFraction: -1, now: clk.now})
	_ = c4
	// c3 read every entry in order 0..9 with TouchInterval 1ns, so 0 is now
	// the oldest again: evicting two entries removes 0 and 1.
	for i := 10; i < 12; i++ {
		mustGet(t, c4, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	for i := range 12 {
		want := i >= 2
		if got := exists(entryPath(c4, key(i))); got != want {
			t.Errorf("entry %d present = %v, want %v", i, got, want)
		}
	}
}

// TestPersistentRecency: without reads in between, the LRU order across a
// restart is the order of last access recorded in mtimes.
func TestPersistentRecency(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	o := Options{Dir: dir, DiskBytes: 4 * entry8K, MinFreeFraction: -1, TouchInterval: time.Nanosecond, now: clk.now}
	c1 := open(t, o)
	var src source
	for i := range 4 {
		mustGet(t, c1, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	for _, i := range []int{2, 0, 3, 1} { // recency: 2 0 3 1 (1 newest)
		if _, ok := c1.Peek(key(i)); !ok {
			t.Fatal("miss")
		}
	}
	c1.Close()
	c2 := open(t, o)
	mustGet(t, c2, key(4), src.fetch(key(4)), payload(key(4), 1000))
	mustGet(t, c2, key(5), src.fetch(key(5)), payload(key(5), 1000))
	for i, want := range []bool{false, true, false, true, true, true} {
		if got := exists(entryPath(c2, key(i))); got != want {
			t.Errorf("entry %d present = %v, want %v", i, got, want)
		}
	}
}

// TestTouchInterval: reads set file times at most once per interval.
func TestTouchInterval(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	c := open(t, Options{Dir: dir, TouchInterval: time.Hour, now: clk.now})
	var src source
	k := key(1)
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	p := entryPath(c, k)
	fi0, _ := os.Stat(p)
	for range 100 {
		c.Peek(k)
	}
	fi1, _ := os.Stat(p)
	if !fi1.ModTime().Equal(fi0.ModTime()) {
		t.Fatalf("mtime changed within the touch interval: %v -> %v", fi0.ModTime(), fi1.ModTime())
	}
	clk.ns.Add(int64(2 * time.Hour))
	c.Peek(k)
	fi2, _ := os.Stat(p)
	if !fi2.ModTime().After(fi1.ModTime()) {
		t.Fatal("mtime not refreshed after the touch interval")
	}
}

// corruptions damage an entry file in place.
var corruptions = []struct {
	name   string
	damage func(t *testing.T, p string)
}{
	{"payload byte flipped", func(t *testing.T, p string) { testkit.FlipByte(t, p, blockSize+10) }},
	{"header length byte flipped", func(t *testing.T, p string) { testkit.FlipByte(t, p, 13) }},
	{"key text byte flipped", func(t *testing.T, p string) { testkit.FlipByte(t, p, fixedHeader+3) }},
	{"header checksum flipped", func(t *testing.T, p string) { testkit.FlipByte(t, p, int64(fixedHeader+len(key(1).String())+2)) }},
	{"bad magic", func(t *testing.T, p string) { testkit.FlipByte(t, p, 0) }},
	{"truncated mid-payload", func(t *testing.T, p string) { truncate(t, p, blockSize+100) }},
	{"truncated to a block boundary", func(t *testing.T, p string) { truncate(t, p, blockSize) }},
	{"truncated mid-header", func(t *testing.T, p string) { truncate(t, p, 1000) }},
	{"zero length", func(t *testing.T, p string) { truncate(t, p, 0) }},
	{"extended with garbage", func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(bytes.Repeat([]byte{0xAB}, blockSize))
		f.Close()
	}},
	{"half-written header (zeros after the magic)", func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(make([]byte, blockSize-8), 8)
		f.Close()
	}},
	{"payload zeroed (lost write)", func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(make([]byte, 1000), blockSize)
		f.Close()
	}},
}

func truncate(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptEntries: each kind of damage is detected — on read by a running
// cache, and at open or on read by a new one — logged with the entry's path,
// refetched, and the right bytes returned; the entry is then valid again.
func TestCorruptEntries(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		for _, cc := range corruptions {
			t.Run(fmt.Sprintf("%s/reopen=%v", cc.name, reopen), func(t *testing.T) {
				dir := t.TempDir()
				log, logs := testLogger(t)
				o := Options{Dir: dir, MinFreeFraction: -1, Logger: log}
				c := open(t, o)
				var src source
				k := key(1)
				want := payload(k, 1000)
				mustGet(t, c, k, src.fetch(k), want)
				p := entryPath(c, k)
				cc.damage(t, p)
				if reopen {
					c.Close()
					c = open(t, o)
				}
				mustGet(t, c, k, src.fetch(k), want)
				if n := src.n.Load(); n != 2 {
					t.Fatalf("fetches = %d, want 2 (the damaged entry refetched)", n)
				}
				if s := c.Stats(); s.Corrupt != 1 {
					t.Fatalf("Corrupt = %d, want 1", s.Corrupt)
				}
				if l := logs.String(); !strings.Contains(l, "corrupt entry") || !strings.Contains(l, p) {
					t.Fatalf("no warning naming %s in:\n%s", p, l)
				}
				// Rewritten and valid: a fresh cache reads it without fetching.
				c.Close()
				c2 := open(t, o)
				mustGet(t, c2, k, src.fetch(k), want)
				if n := src.n.Load(); n != 2 {
					t.Fatal("the refetched entry was not stored again")
				}
				if _, _, _, ok := c2.Locate(k); !ok {
					t.Fatal("Locate misses the repaired entry")
				}
			})
		}
	}
}

// TestLocateCorrupt: Locate verifies before it answers.
func TestLocateCorrupt(t *testing.T) {
	log, _ := testLogger(t)
	c := open(t, Options{Dir: t.TempDir(), Logger: log})
	var src source
	k := key(1)
	mustGet(t, c, k, src.fetch(k), payload(k, 1000))
	testkit.FlipByte(t, entryPath(c, k), blockSize+999)
	if _, _, _, ok := c.Locate(k); ok {
		t.Fatal("Locate returned a corrupt entry")
	}
	if exists(entryPath(c, k)) {
		t.Fatal("corrupt entry not removed")
	}
}

// TestKeyMismatch: an entry file holding another key (what a sha256
// collision would look like) is a miss, never the other key's bytes.
func TestKeyMismatch(t *testing.T) {
	log, logs := testLogger(t)
	c := open(t, Options{Dir: t.TempDir(), Logger: log})
	var src source
	a, b := key(1), key(2)
	mustGet(t, c, a, src.fetch(a), payload(a, 1000))
	data, err := os.ReadFile(entryPath(c, a))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entryPath(c, b), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, b, src.fetch(b), payload(b, 1000))
	if src.n.Load() != 2 {
		t.Fatal("the mismatching entry was served")
	}
	if !strings.Contains(logs.String(), "another key") {
		t.Fatal("no warning about the key mismatch")
	}
	mustGet(t, c, a, src.fetch(a), payload(a, 1000))
}

// TestOpenCleansLeftovers: what a crash can leave — temp files of dead
// writers, truncated entries, headers half written — and what must survive:
// temp files of live writers, and every file the cache does not own.
func TestOpenCleansLeftovers(t *testing.T) {
	dir := t.TempDir()
	log, logs := testLogger(t)
	o := Options{Dir: dir, MinFreeFraction: -1, Logger: log}
	c := open(t, o)
	var src source
	for i := range 4 {
		mustGet(t, c, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	c.Close()
	root := filepath.Join(dir, subdirName)
	shard := filepath.Join(root, "ab")

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	write := func(p string, b []byte, age time.Duration) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if age > 0 {
			old := time.Now().Add(-age)
			os.Chtimes(p, old, old)
		}
	}
	deadTemp := filepath.Join(shard, fmt.Sprintf("tmp.%d.0123456789abcdef", deadPID))
	deadRootTemp := filepath.Join(root, fmt.Sprintf("tmp.%d.0123456789abcdee", deadPID))
	liveTemp := filepath.Join(shard, fmt.Sprintf("tmp.%d.0123456789abcdef", os.Getpid()))
	oldLiveTemp := filepath.Join(shard, fmt.Sprintf("tmp.%d.fedcba9876543210", os.Getppid()))
	write(deadTemp, []byte("partial"), 0)
	write(deadRootTemp, []byte("{"), 0)
	write(liveTemp, []byte("in progress"), 0)
	write(oldLiveTemp, []byte("abandoned"), time.Hour)
	foreign := []string{
		filepath.Join(dir, "notes.txt"),
		filepath.Join(root, "README"),
		filepath.Join(shard, "tmp.notapid.0123456789abcdef"),
		filepath.Join(shard, strings.Repeat("0", 64)+".dfc.bak"),
		filepath.Join(root, "zz", "x"),
	}
	os.MkdirAll(filepath.Join(root, "zz"), 0o755)
	for _, p := range foreign {
		write(p, []byte("not the cache's"), 2*time.Hour)
	}
	// A half-written header under a final name (a filesystem that lost the
	// write), and an entry cut short.
	c0 := open(t, o)
	write(entryPath(c0, key(0)), append([]byte(magic), make([]byte, 2*blockSize-8)...), 0)
	truncate(t, entryPath(c0, key(1)), 3000)
	c0.Close()

	c2 := open(t, o)
	for _, p := range []string{deadTemp, deadRootTemp, oldLiveTemp} {
		if exists(p) {
			t.Errorf("stale temp file %s survived open", filepath.Base(p))
		}
	}
	if !exists(liveTemp) {
		t.Error("a live writer's temp file was removed")
	}
	for _, p := range foreign {
		if !exists(p) {
			t.Errorf("foreign file %s was removed", p)
		}
	}
	if exists(entryPath(c2, key(1))) {
		t.Error("the truncated entry survived open")
	}
	for i := range 4 {
		mustGet(t, c2, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	if n := src.n.Load(); n != 6 {
		t.Fatalf("fetches = %d, want 6 (4, then the two damaged ones)", n)
	}
	if !strings.Contains(logs.String(), "removed stale temp file") {
		t.Error("no log line about stale temp files")
	}
	os.Remove(liveTemp)
}

// TestTwoInstances: two Caches on one directory, four goroutines each,
// reading and writing overlapping keys under a budget that forces
// evictions; every byte returned is checked.
func TestTwoInstances(t *testing.T) {
	dir := t.TempDir()
	const budget = 512 << 10
	o := Options{MemBytes: 64 << 10, Dir: dir, DiskBytes: budget, MinFreeFraction: -1, RescanInterval: 50 * time.Millisecond}
	caches := []*Cache{open(t, o), open(t, o)}
	sizes := func(k Key) int { return 100 + len(k.File)*int(k.Unit[0]) }
	var wg sync.WaitGroup
	for ci, c := range caches {
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(g)))
				for range 400 {
					k := key(rng.IntN(150))
					want := payload(k, sizes(k)*20)
					got, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) {
						return bytes.Clone(want), nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					if !bytes.Equal(got, want) {
						t.Errorf("cache %d: wrong bytes for %v", ci, k)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range caches {
		if s := c.Stats(); s.Corrupt != 0 || s.DiskWriteErrors != 0 {
			t.Fatalf("stats: %+v", s)
		}
		c.Close()
	}
	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes > 2*budget || u.TempFiles != 0 {
		t.Fatalf("usage after two writers: %+v (budget %d each)", u, budget)
	}
	// Everything left on disk is valid.
	c := open(t, Options{Dir: dir, DiskBytes: budget, MinFreeFraction: -1})
	for i := range 150 {
		k := key(i)
		if v, ok := c.Peek(k); ok && !bytes.Equal(v, payload(k, sizes(k)*20)) {
			t.Fatalf("entry %d has wrong bytes", i)
		}
	}
	if c.Stats().Corrupt != 0 {
		t.Fatal("corrupt entries after concurrent use")
	}
}

// TestRescan: a process sees entries another process wrote after it opened,
// and forgets entries the other evicted, once it rescans.
func TestRescan(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, MinFreeFraction: -1}
	a, b := open(t, o), open(t, o)
	var src source
	for i := range 3 {
		mustGet(t, b, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	if s := a.Stats(); s.DiskEntries != 0 {
		t.Fatalf("a knows %d entries before any access", s.DiskEntries)
	}
	// A Get finds another process's entry without a rescan.
	mustGet(t, a, key(0), src.fetch(key(0)), payload(key(0), 1000))
	if src.n.Load() != 3 {
		t.Fatal("a refetched b's entry")
	}
	os.Remove(entryPath(a, key(0)))
	a.disk.rescan()
	if s := a.Stats(); s.DiskEntries != 2 || s.DiskBytes != 2*entry8K {
		t.Fatalf("after rescan: %+v", s)
	}
}

// TestRescanEnforcesBudget: when the directory holds more than the budget
// (other processes' writes), a rescan evicts down to it.
func TestRescanEnforcesBudget(t *testing.T) {
	dir := t.TempDir()
	big := open(t, Options{Dir: dir, MinFreeFraction: -1})
	var src source
	for i := range 10 {
		mustGet(t, big, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	small := open(t, Options{Dir: dir, DiskBytes: 4 * entry8K, MinFreeFraction: -1, RescanInterval: time.Nanosecond})
	if s := small.Stats(); s.DiskBytes > 4*entry8K {
		t.Fatalf("open did not enforce the budget: %+v", s)
	}
	if u, _ := DiskUsage(dir); u.Entries != 4 {
		t.Fatalf("%d entries on disk, want 4", u.Entries)
	}
	// big writes more behind small's back; small's next eviction rescans.
	for i := 10; i < 20; i++ {
		mustGet(t, big, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	mustGet(t, small, key(20), src.fetch(key(20)), payload(key(20), 1000))
	testkit.WaitUntil(t, "rescan", func() bool { u, _ := DiskUsage(dir); return u.Bytes <= 4*entry8K })
}

func TestClearAndDiskUsage(t *testing.T) {
	dir := t.TempDir()
	c := open(t, Options{Dir: dir, DiskBytes: 1 << 20, MinFreeFraction: 0.01})
	var src source
	for i := range 5 {
		mustGet(t, c, key(i), src.fetch(key(i)), payload(key(i), 1000))
	}
	root := filepath.Join(dir, subdirName)
	foreign := []string{filepath.Join(dir, "keep.txt"), filepath.Join(root, "keep.txt"), filepath.Join(root, "00", "keep.txt")}
	for _, p := range foreign {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !u.Exists || u.Entries != 5 || u.Bytes != 5*entry8K || u.OtherFiles != 2 || u.Budget != 1<<20 || u.MinFreeFraction != 0.01 || u.TotalBytes == 0 {
		t.Fatalf("usage: %+v", u)
	}
	c.Close()
	if err := Clear(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range foreign {
		if !exists(p) {
			t.Errorf("Clear removed %s", p)
		}
	}
	if entries, temps := ownFiles(t, dir); len(entries)+len(temps) != 0 || exists(filepath.Join(root, metaName)) {
		t.Fatal("Clear left cache files")
	}
	if exists(filepath.Join(root, "01")) || !exists(filepath.Join(root, "00")) {
		t.Error("Clear should remove empty shards and keep the one holding a foreign file")
	}
	if err := Clear(filepath.Join(dir, "never-used")); err != nil {
		t.Fatalf("Clear of a missing cache: %v", err)
	}
	if u, err := DiskUsage(filepath.Join(dir, "never-used")); err != nil || u.Exists {
		t.Fatalf("DiskUsage of a missing cache: %+v %v", u, err)
	}
	// A cleared directory works again, also for a process that had it open.
	c2 := open(t, Options{Dir: dir})
	mustGet(t, c2, key(1), src.fetch(key(1)), payload(key(1), 1000))
	Clear(dir)
	mustGet(t, c2, key(2), src.fetch(key(2)), payload(key(2), 1000))
	if !exists(entryPath(c2, key(2))) {
		t.Fatal("a write after Clear did not recreate the shard")
	}
}
