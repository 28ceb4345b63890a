package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// bench holds the tools and the measurements of one `make bench`.
type bench struct {
	out         string // work directory
	runs        int
	quick       bool   // small workloads (-quick)
	deltafs     string // binaries
	floor       string
	readloopBin string
	python      string
	series      map[string]*series
	order       []string
	notes       []string
	limits      guardLimits       // the scale workloads' watchdog (guard.go)
	aborted     map[string]string // workload: why the watchdog stopped it
}

// series is one measured quantity, one value per run.
type series struct {
	key    string
	unit   string
	values []float64
}

func newBench(out string, runs int, quick bool) (*bench, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	if quick {
		// Own tables and copies, so that a quick run never passes for a
		// full one (nor reuses its tables).
		abs = filepath.Join(abs, "quick")
		shmRoot = shmRoot + "-quick"
	}
	// Per process: the machine may run other benches, whose end removes
	// their own copies, not ours.
	shmRoot = fmt.Sprintf("%s-%d", shmRoot, os.Getpid())
	b := &bench{out: abs, runs: runs, quick: quick, series: map[string]*series{}, python: "/usr/bin/python3", limits: defaultLimits, aborted: map[string]string{}}
	bin := filepath.Join(abs, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		dst *string
		pkg string
	}{{&b.deltafs, "./cmd/deltafs"}, {&b.floor, "./bench/floor"}, {&b.readloopBin, "./bench/readloop"}} {
		*t.dst = filepath.Join(bin, filepath.Base(t.pkg))
		if out, err := exec.Command("go", "build", "-o", *t.dst, t.pkg).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", t.pkg, err, out)
		}
	}
	return b, nil
}

// shmRoot holds the tmpfs copies of the samples, the baseline (suffixed
// with -quick for a quick run and the bench's process id).
var shmRoot = "/dev/shm/deltafs-bench"

// close removes the tmpfs copies: they hold memory until removed.
func (b *bench) close() {
	if err := os.RemoveAll(shmRoot); err != nil {
		log.Printf("remove %s: %v", shmRoot, err)
	}
}

// add records one value of a series.
func (b *bench) add(key, unit string, v float64) {
	s, ok := b.series[key]
	if !ok {
		s = &series{key: key, unit: unit}
		b.series[key] = s
		b.order = append(b.order, key)
	}
	s.values = append(s.values, v)
	log.Printf("  %-58s %12.1f %s", key, v, unit)
}

func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// noteOnce adds a note unless it is there already.
func (b *bench) noteOnce(n string) {
	for _, o := range b.notes {
		if o == n {
			return
		}
	}
	b.notes = append(b.notes, n)
}

// median and spread (min, max) of a series' values.
func stats(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// run runs a command and returns its stdout, failing with its stderr.
func run(name string, args ...string) (string, error) {
	return runCtx(context.Background(), name, args...)
}

// runCtx is run, killed when ctx ends.
func runCtx(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// readloop reads every sample under roots with t threads.
func (b *bench) readloop(threads int, roots ...string) (filesPerS, mbPerS float64, err error) {
	return b.readloopCtx(context.Background(), threads, roots...)
}

// readloopArgs is readloop with more flags (-list).
func (b *bench) readloopArgs(threads int, flags []string, roots ...string) (filesPerS, mbPerS float64, err error) {
	return b.readloopFlags(context.Background(), threads, flags, roots...)
}

// readloopCtx is readloop, killed when ctx ends.
func (b *bench) readloopCtx(ctx context.Context, threads int, roots ...string) (filesPerS, mbPerS float64, err error) {
	return b.readloopFlags(ctx, threads, nil, roots...)
}

func (b *bench) readloopFlags(ctx context.Context, threads int, flags []string, roots ...string) (filesPerS, mbPerS float64, err error) {
	args := append([]string{"-threads", strconv.Itoa(threads)}, flags...)
	out, err := runCtx(ctx, b.readloopBin, append(args, roots...)...)
	if err != nil {
		return 0, 0, err
	}
	var r struct {
		Files     int     `json:"files"`
		FilesPerS float64 `json:"files_per_s"`
		MBPerS    float64 `json:"mb_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return 0, 0, fmt.Errorf("readloop printed %q: %w", out, err)
	}
	if r.Files == 0 {
		return 0, 0, errors.New("readloop found no files")
	}
	return r.FilesPerS, r.MBPerS, nil
}

// imagefolder times ImageFolder epochs over root, in samples/s per epoch.
func (b *bench) imagefolder(root string, epochs int) ([]float64, error) {
	return b.imagefolderArgs(root, epochs, "--workers", "2")
}

// imagefolderArgs is imagefolder with the script's flags (--workers,
// --batch, --shuffle).
func (b *bench) imagefolderArgs(root string, epochs int, flags ...string) ([]float64, error) {
	args := append([]string{"bench/scripts/imagefolder_epochs.py", root, "--epochs", strconv.Itoa(epochs)}, flags...)
	out, err := run(b.python, args...)
	if err != nil {
		return nil, err
	}
	var r struct {
		Samples int       `json:"samples"`
		Seconds []float64 `json:"seconds"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("imagefolder printed %q: %w", out, err)
	}
	rates := make([]float64, len(r.Seconds))
	for i, s := range r.Seconds {
		rates[i] = float64(r.Samples) / s
	}
	return rates, nil
}

// mounted is a running FUSE server (deltafs or the floor).
type mounted struct {
	dir string
	cmd *exec.Cmd
}

// mount starts deltafs on table at a fresh mount point and waits for it.
func (b *bench) mount(table string, flags ...string) (*mounted, error) {
	dir, err := os.MkdirTemp(b.out, "mnt-")
	if err != nil {
		return nil, err
	}
	return b.serve(dir, filepath.Join(dir, "latest"), b.deltafs, append([]string{"mount", table, dir}, flags...)...)
}

// mountCold mounts table with flags over a fresh, empty cache directory;
// done unmounts it and removes the cache.
func (b *bench) mountCold(table string, flags ...string) (m *mounted, done func(), err error) {
	cache, err := os.MkdirTemp(b.out, "cache-")
	if err != nil {
		return nil, nil, err
	}
	m, err = b.mount(table, append(flags, "--cache-dir", cache)...)
	if err != nil {
		os.RemoveAll(cache)
		return nil, nil, err
	}
	return m, func() { m.unmount(); os.RemoveAll(cache) }, nil
}

// mountFloor starts the FUSE floor with files of size bytes.
func (b *bench) mountFloor(files, size int) (*mounted, error) {
	dir, err := os.MkdirTemp(b.out, "floor-")
	if err != nil {
		return nil, err
	}
	return b.serve(dir, filepath.Join(dir, "00000000.bin"), b.floor, "-files", strconv.Itoa(files), "-size", strconv.Itoa(size), dir)
}

func (b *bench) serve(dir, ready, bin string, args ...string) (*mounted, error) {
	logf, err := os.Create(dir + ".log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &mounted{dir: dir, cmd: cmd}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(ready); err == nil {
			return m, nil
		}
	}
	m.unmount()
	log, _ := os.ReadFile(logf.Name())
	return nil, fmt.Errorf("%s did not come up: %s", filepath.Base(bin), log)
}

func (m *mounted) unmount() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
	_ = exec.Command("fusermount3", "-u", "-z", m.dir).Run()
	_ = os.Remove(m.dir)
}

// rssMB is the server's resident memory in MB.
func (m *mounted) rssMB() (float64, error) { return m.statusMB("VmRSS") }

// peakMB is the server's peak resident memory so far in MB (VmHWM).
func (m *mounted) peakMB() (float64, error) { return m.statusMB("VmHWM") }

// statusMB is a kB field of the server's /proc/PID/status, in MB.
func (m *mounted) statusMB(field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no " + field)
}

// shardZeroStats mounts table with flags and --cache-dir none, reads
// every sample of latest/shard/0 with one thread, and returns the mount's
// stats after that cold pass.
func (b *bench) shardZeroStats(table string, flags ...string) (map[string]any, error) {
	m, err := b.mount(table, append(append([]string{}, flags...), "--cache-dir", "none")...)
	if err != nil {
		return nil, err
	}
	defer m.unmount()
	if _, _, err := b.readloop(1, filepath.Join(m.dir, "latest", "shard", "0")); err != nil {
		return nil, err
	}
	return m.stats()
}

// stats reads MOUNTPOINT/.deltafs/stats.
func (m *mounted) stats() (map[string]any, error) { return readStats(m.dir) }

// readStats reads MOUNTPOINT/.deltafs/stats of the mount at dir.
func readStats(dir string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".deltafs", "stats"))
	if err != nil {
		return nil, err
	}
	var s map[string]any
	return s, json.Unmarshal(data, &s)
}

// number digs a numeric value out of nested stats by dotted path.
func number(s map[string]any, path string) float64 {
	var cur any = s
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return -1
		}
		cur = m[k]
	}
	f, ok := cur.(float64)
	if !ok {
		return -1
	}
	return f
}

// copyTree copies the sample files under src (a mount) to dst.
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	_, err := run("cp", "-r", "--no-preserve=all", src+"/.", dst)
	return err
}

func machine() string {
	host, _ := os.Hostname()
	kernel, _ := run("uname", "-r")
	cpu := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.Fields(strings.SplitN(string(data), "\n", 2)[0])[1] + " kB"
	}
	return fmt.Sprintf("%s: %d cores (%s), %s memory, Linux %s, %s", host, runtime.NumCPU(), cpu, mem, strings.TrimSpace(kernel), runtime.Version())
}
