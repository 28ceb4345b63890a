package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The scale workloads (scale.go) list and read millions of samples, which
// with a FUSE server that keeps an object per file can take most of the
// machine's memory, in the server and in the kernel (dentries and FUSE
// inodes). A guarded mount runs under a watchdog that samples the server's
// resident memory and the kernel's memory every 100 ms and, past a limit,
// kills the server and unmounts lazily: the kernel then aborts the FUSE
// connection, every request in flight fails, and the dentries and inodes
// go with the superblock. The run is recorded as aborted, with why, instead
// of taking the machine down. Every step is also bounded in time.

// guardLimits are the watchdog's limits (flags of bench/run).
type guardLimits struct {
	maxRSS     int64         // server resident memory, bytes
	maxSlab    int64         // growth of the kernel's Slab since the mount, bytes
	minAvail   int64         // MemAvailable floor, bytes
	step       time.Duration // bound on one step (a listing, a find, the first sample)
	epochFloor float64       // an epoch slower than this many files/s is aborted
}

var defaultLimits = guardLimits{maxRSS: 6 << 30, maxSlab: 6 << 30, minAvail: 3 << 30, step: 10 * time.Minute, epochFloor: 10000}

// errAborted marks a step ended by the watchdog or a time bound.
var errAborted = errors.New("aborted")

// guarded is a deltafs mount under the watchdog.
type guarded struct {
	dir     string
	cmd     *exec.Cmd
	start   time.Time // when `deltafs mount` was started
	up      time.Duration
	limits  guardLimits
	ctx     context.Context
	cancel  context.CancelCauseFunc
	slab0   int64 // Slab when the mount started
	step    atomic.Value
	peakRSS atomic.Int64 // sampled
	hwm     atomic.Int64 // the kernel's VmHWM, last read
	once    sync.Once
	reason  string // why the watchdog stopped the mount ("" if it did not)
	stop    chan struct{}
	sampled sync.WaitGroup
	trace   *os.File
}

// mountGuarded starts deltafs on table at a fresh mount point with the
// watchdog running from the first instant, and waits for the mount (its
// `latest` link) to appear, polling every 5 ms. trace gets one line per
// sample: seconds since start, step, server RSS, Slab, MemAvailable (MB).
func (b *bench) mountGuarded(table, trace string, flags ...string) (*guarded, error) {
	dir, err := os.MkdirTemp(b.out, "mnt-")
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(dir + ".log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	tf, err := os.Create(trace)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(tf, "seconds\tstep\tserver_rss_mb\tslab_mb\tmem_available_mb")
	mi, err := meminfo()
	if err != nil {
		return nil, err
	}
	g := &guarded{dir: dir, limits: b.limits, slab0: mi["Slab"], stop: make(chan struct{}), trace: tf}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	g.step.Store("mount")
	g.cmd = exec.Command(b.deltafs, append([]string{"mount", table, dir}, flags...)...)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.start = time.Now()
	if err := g.cmd.Start(); err != nil {
		tf.Close()
		return nil, err
	}
	g.sampled.Add(1)
	go g.watch()
	for deadline := g.start.Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(filepath.Join(dir, "latest")); err == nil {
			g.up = time.Since(g.start)
			return g, nil
		}
		if time.Now().After(deadline) || g.ctx.Err() != nil {
			g.close()
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("deltafs mount did not come up: %s%s", g.reason, out)
		}
	}
}

// watch samples memory every 100 ms until close, and aborts past a limit.
func (g *guarded) watch() {
	defer g.sampled.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		g.sample()
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

func (g *guarded) sample() {
	rss, hwm, _ := procRSS(g.cmd.Process.Pid)
	if rss > g.peakRSS.Load() {
		g.peakRSS.Store(rss)
	}
	if hwm > 0 {
		g.hwm.Store(hwm)
	}
	mi, err := meminfo()
	if err != nil {
		return
	}
	step := g.step.Load().(string)
	fmt.Fprintf(g.trace, "%.1f\t%s\t%.0f\t%.0f\t%.0f\n", time.Since(g.start).Seconds(), step, mb(rss), mb(mi["Slab"]), mb(mi["MemAvailable"]))
	switch {
	case rss > g.limits.maxRSS:
		g.abort(fmt.Sprintf("server RSS over %s during %s", gb(g.limits.maxRSS), step))
	case mi["Slab"]-g.slab0 > g.limits.maxSlab:
		g.abort(fmt.Sprintf("kernel slab grew over %s during %s (server RSS %s)", gb(g.limits.maxSlab), step, gb(rss)))
	case mi["MemAvailable"] < g.limits.minAvail:
		g.abort(fmt.Sprintf("MemAvailable under %s during %s (server RSS %s, slab +%s)", gb(g.limits.minAvail), step, gb(rss), gb(mi["Slab"]-g.slab0)))
	}
}

// abort stops the server at once: SIGKILL, then a lazy unmount. The kernel
// aborts the connection when the server's /dev/fuse closes, so every
// request in flight (a listing, an epoch) fails instead of hanging.
func (g *guarded) abort(reason string) {
	g.once.Do(func() {
		g.reason = reason
		log.Printf("  ABORT after %.0f s: %s", time.Since(g.start).Seconds(), reason)
		g.cancel(fmt.Errorf("%w: %s", errAborted, reason))
		_ = g.cmd.Process.Kill()
		_ = exec.Command("fusermount3", "-u", "-z", g.dir).Run()
	})
}

// aborted is the watchdog's reason, or "".
func (g *guarded) aborted() string {
	if g.ctx.Err() == nil {
		return ""
	}
	return g.reason
}

// run runs one step bounded by limit: fn gets a context that ends when the
// watchdog aborts or the bound passes (the bound then aborts the mount, so
// a system call stuck in the FUSE server returns). It returns the step's
// wall time.
func (g *guarded) run(name string, limit time.Duration, fn func(ctx context.Context) error) (time.Duration, error) {
	if r := g.aborted(); r != "" {
		return 0, fmt.Errorf("%w: %s", errAborted, r)
	}
	g.step.Store(name)
	ctx, cancel := context.WithTimeout(g.ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- fn(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if g.ctx.Err() == nil {
			g.abort(fmt.Sprintf("%s took over %s", name, limit))
		}
		// The server is gone: fn's system calls fail now. Wait a little
		// for it, not forever.
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	took := time.Since(start)
	if r := g.aborted(); r != "" {
		return took, fmt.Errorf("%w: %s", errAborted, r)
	}
	return took, err
}

// close unmounts (SIGTERM, as Ctrl-C would) and stops the watchdog; the
// last VmHWM read is the server's peak resident memory.
func (g *guarded) close() {
	if g.cmd.ProcessState == nil {
		if rss, hwm, err := procRSS(g.cmd.Process.Pid); err == nil {
			g.hwm.Store(hwm)
			if rss > g.peakRSS.Load() {
				g.peakRSS.Store(rss)
			}
		}
	}
	close(g.stop)
	g.sampled.Wait()
	g.trace.Close()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	_ = exec.Command("fusermount3", "-u", "-z", g.dir).Run()
	_ = os.Remove(g.dir)
	g.cancel(nil)
}

// peak is the server's peak resident memory in bytes: the kernel's VmHWM
// (exact), or the highest 100 ms sample when that is larger or missing.
func (g *guarded) peak() int64 { return max(g.hwm.Load(), g.peakRSS.Load()) }

// stats reads MOUNT/.deltafs/stats.
func (g *guarded) stats() (map[string]any, error) { return readStats(g.dir) }

// rss is the server's resident memory now, in bytes.
func (g *guarded) rss() (int64, error) {
	rss, _, err := procRSS(g.cmd.Process.Pid)
	return rss, err
}

// countLines runs a command under ctx and counts the lines it prints (ls
// -f, find), without keeping them unless keep is set. On an abort it still
// says how many lines came out.
func countLines(ctx context.Context, keep *[]string, name string, args ...string) (int, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n := 0
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			n++
			if keep != nil {
				*keep = append(*keep, strings.TrimSuffix(string(line), "\n"))
			}
		}
		if err == bufio.ErrBufferFull {
			return n, errors.New("line over 1 MiB")
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if err := cmd.Wait(); err != nil {
		return n, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, oneLine(stderr.String()))
	}
	return n, nil
}

// meminfo reads /proc/meminfo in bytes.
func meminfo() (map[string]int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		if len(f) == 3 && f[2] == "kB" {
			v <<= 10
		}
		m[strings.TrimSuffix(f[0], ":")] = v
	}
	return m, nil
}

// dentries is the kernel's count of dentries (/proc/sys/fs/dentry-state).
func dentries() (int64, error) {
	data, err := os.ReadFile("/proc/sys/fs/dentry-state")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("empty dentry-state")
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// procRSS is a process's VmRSS and VmHWM in bytes.
func procRSS(pid int) (rss, hwm int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS (server gone)")
	}
	return rss, hwm, nil
}

// dropCaches writes back dirty pages and drops the page cache, dentries
// and inodes, so that kernel memory measured next starts from a floor.
// Needs root; bounded, because sync waits for every other writer too.
func dropCaches() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "sync").Run(); err != nil {
		return fmt.Errorf("sync: %v", err)
	}
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}

func mb(v int64) float64 { return float64(v) / 1e6 }

func gb(v int64) string { return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30)) }
