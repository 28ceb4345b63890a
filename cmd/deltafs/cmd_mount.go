package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/cache/materialize"
	"github.com/deltafs/deltafs/extents"
	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/table"
)

func init() { rootCmd.AddCommand(newMountCmd()) }

// mountOptions are the flags of `deltafs mount`.
type mountOptions struct {
	specFlags
	cacheFlags

	Refresh      time.Duration
	Immutable    time.Duration
	KernelInodes int64
	Overlay      bool
	Prefill      string

	MetricsAddr string
	AllowOther  bool
	Nonempty    bool
	Xattrs      bool
	Debug       bool
	CPUProfile  string
	MemProfile  string
}

func (o *mountOptions) AddFlags(f *pflag.FlagSet) {
	o.specFlags.addFlags(f)
	f.DurationVar(&o.Refresh, "refresh", 10*time.Second, "how often to look for new commits (also the kernel timeout of latest, version/ and at/)")
	f.DurationVar(&o.Immutable, "immutable-timeout", 24*time.Hour, "kernel entry/attribute timeout under version/N (versions never change)")
	f.Int64Var(&o.KernelInodes, "kernel-inodes", fusefs.DefaultKernelInodes, "listings give entries their attributes (sparing a first open its LOOKUP) while the kernel holds fewer than this many of the mount's inodes, about 1.1 KiB of kernel memory each; past it, names only (0: names only, always)")
	f.BoolVar(&o.Overlay, "overlay", true, "as root, stack a read-only overlayfs on each version directory read (and latest's), so that Python's isatty on every open() is answered in the kernel instead of an IOCTL round trip (not root: one warning line, and the mount goes on without them; --overlay=false: never; see the README for what it changes)")
	f.StringVar(&o.Prefill, "prefill", "auto", "push up to this many sample bytes into the kernel's page cache ahead of the reader after each listing, over the mount's life (auto: an eighth of memory, at most 8GiB; 0: none)")
	o.cacheFlags.addFlags(f)
	f.BoolVar(&o.Xattrs, "xattrs", false, "serve each sample file's disk-cache extent as the xattr "+extents.XattrName+" (materialising it on demand); off by default because xattrs cost ls -l a round trip per file")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. localhost:9100; default: none)")
	f.BoolVar(&o.Nonempty, "nonempty", false, "mount over a directory that holds files (hidden until the unmount); without it such a mount point is refused")
	f.BoolVar(&o.AllowOther, "allow-other", false, "let other users read the mount (needs user_allow_other in /etc/fuse.conf when not root)")
	f.BoolVar(&o.Debug, "fuse-debug", false, "log every FUSE request")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the server to this file until unmount")
	f.StringVar(&o.MemProfile, "memprofile", "", "write a heap profile of the server to this file at unmount")
	_ = f.MarkHidden("memprofile")
	_ = f.MarkHidden("cpuprofile")
}

func newMountCmd() *cobra.Command {
	var o mountOptions
	c := &cobra.Command{
		Use:   "mount TABLE|CATALOG MOUNTPOINT [flags]",
		Short: "Mount every version of a table, or of a catalog's tables, as sample files (foreground; Ctrl-C unmounts)",
		Long: `Mount a Delta table read-only at MOUNTPOINT:

  MOUNTPOINT/
    latest -> version/N        moves when the table gets a new commit (polled every --refresh)
    version/N/                 every readable version; new ones appear without a remount
      _commit.json _schema.json
      shard/K/                 K = 0 .. --shards-1
        _samples.tsv           one line per sample: path, bytes, class, id
        _extents.tsv           with a disk cache: where each sample lies in it (reading it caches the shard)
        <id><ext>              one file per live row (or <class>/<id><ext> with --class-column)
    at/<time>                  link to the version current at <time> (Unix ms, RFC 3339 or as deltafs log prints it)
    .deltafs/stats             counters (JSON)

A catalog location mounts many tables, each as TABLE/ holding the tree above:

  uc://CATALOG.SCHEMA          MOUNTPOINT/TABLE/      (the schema's Delta tables)
  uc://CATALOG                 MOUNTPOINT/SCHEMA/TABLE/
  PROFILE.share                MOUNTPOINT/SHARE/SCHEMA/TABLE/
  PROFILE.share#SHARE          MOUNTPOINT/SCHEMA/TABLE/

A table is opened (and checked, as a table mount checks its one) only when a
request enters its directory, so listing a schema reads no table's log; the
listings are read again every --refresh (dropped tables answer ENOENT); a
table that cannot be opened answers EIO with one log line while the others
serve. The sample and cache flags apply to every table; point a loader at one
table's shard (MOUNTPOINT/TABLE/latest/shard/K). --xattrs and --metrics-addr
are refused there. See the README's "Browsing a catalog".

The table, its latest version and the sample flags are checked before mounting
(--image against the length of one value of the data column), and so is MOUNTPOINT:
an existing, empty directory (--nonempty mounts over files, hiding them). The
mount runs in the foreground and logs to stderr; SIGINT or SIGTERM unmounts it (lazily
when files stay open under it) and ends the process within 10s, even when reads are
stuck in storage or the mount point was unmounted from outside; a second signal exits
at once.

Exit status: 0 after a clean unmount, 1 on any error, also when requests stuck in
storage were abandoned (one line on stderr; nothing is left mounted), 2 on bad usage.`,
		Args: positional("TABLE", "MOUNTPOINT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMount(cmd.Context(), &o, args[0], args[1])
		},
	}
	o.AddFlags(c.Flags())
	return c
}

func runMount(ctx context.Context, o *mountOptions, location, mnt string) error {
	if o.Refresh <= 0 {
		return usageError{errors.New("--refresh must be positive")}
	}
	if o.Xattrs && o.CacheDir == "none" {
		return usageError{errors.New("--xattrs needs a disk cache: the extents lie in it (drop --cache-dir none)")}
	}
	if err := fusefs.CheckMountpoint(mnt); err != nil {
		return err
	}
	if !o.Nonempty {
		if err := fusefs.CheckEmpty(mnt); err != nil {
			return err
		}
	}
	prefill := fusefs.DefaultPrefill()
	if o.Prefill != "auto" {
		var err error
		if prefill, err = parseSize("--prefill", o.Prefill); err != nil {
			return usageError{err}
		}
	}
	// The flags' errors first, for a table and a catalog alike.
	if _, err := o.specFlags.spec(); err != nil {
		return usageError{err}
	}
	if _, err := o.cacheFlags.options(); err != nil {
		return usageError{err}
	}
	if cat, ok, err := table.OpenCatalog(location, global.storage); ok {
		if err != nil {
			return err
		}
		return runCatalogMount(ctx, o, location, cat, mnt, prefill)
	}
	stk, err := openStack(ctx, location, &o.specFlags, &o.cacheFlags)
	if err != nil {
		return err
	}
	mounted := false
	defer func() {
		if !mounted {
			stk.Close() // stopMount closes it, within its bound
		}
	}()
	var root *fusefs.Root
	rootOpts := fusefs.Options{
		Samples: stk.Samples, Refresh: o.Refresh, Immutable: o.Immutable, KernelInodes: kernelInodes(o.KernelInodes),
		Prefill: prefill,
		Stats:   func() any { return mountStats(root, stk.Table) },
	}
	if stk.Cache.Dir() != "" {
		// Every shard gets _extents.tsv; --xattrs adds the per-file xattr.
		if rootOpts.Extents, err = materialize.New(stk.Cache, stk.Store.Location(), nil); err != nil {
			return err
		}
		rootOpts.Xattrs = o.Xattrs
	}
	root, err = fusefs.NewRoot(ctx, rootOpts)
	if err != nil {
		return table.WithLocation(location, err)
	}
	if o.MetricsAddr != "" {
		stop, bound, err := serveMetrics(o.MetricsAddr, metricsRegistry(stk, root))
		if err != nil {
			return err
		}
		defer stop()
		slog.Info("serving metrics", "url", "http://"+bound+"/metrics")
	}
	server, err := fusefs.Mount(mnt, root, root.MountOptions(stk.Store.Location(), o.AllowOther, o.Debug))
	if err != nil {
		return fmt.Errorf("mount %s: %w", mnt, err)
	}
	mounted = true
	if o.Overlay {
		if err := root.StartOverlays(mnt); err != nil {
			slog.Warn(err.Error())
		}
	}
	slog.Info("mounted", "table", location, "mountpoint", mnt, "versions", len(stk.Versions), "latest", stk.Latest.Version,
		"spec", stk.Describe, "cache", stk.cacheDir, "refresh", o.Refresh)

	if o.MemProfile != "" {
		defer func() {
			if pf, err := os.Create(o.MemProfile); err == nil {
				_ = pprof.WriteHeapProfile(pf)
				pf.Close()
			}
		}()
	}
	if o.CPUProfile != "" {
		pf, err := os.Create(o.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(pf)
		}
		if err != nil {
			slog.Warn("no CPU profile", "err", err)
		} else {
			defer func() { pprof.StopCPUProfile(); pf.Close() }()
		}
	}
	return serveMount(ctx, mnt, server, root.Run, stk)
}

// serveMount serves the mounted tree at mnt until it is unmounted from
// outside or ctx ends (a signal), polling its tables with poll meanwhile,
// then releases stk's storage within mountStopBudget.
func serveMount(ctx context.Context, mnt string, server interface{ Wait() }, poll func(context.Context), stk mountStorage) error {
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()
	go poll(pollCtx)
	served := make(chan struct{})
	go func() { server.Wait(); close(served) }()
	// A forced exit (a second signal, or exitGrace passed) detaches the
	// mount point rather than leave a dead mount behind.
	defer atForcedExit(func() {
		if fusefs.Mounted(mnt) {
			_ = runUnmount(mnt, true)
		}
	})()
	select {
	case <-served:
		slog.Info("unmounted from outside", "mountpoint", mnt)
		stopPoll()
		if !closeWithin(stk, mountStopBudget) {
			return fmt.Errorf("unmounted %s from outside, but requests still stuck in storage after %s: exiting without them", mnt, mountStopBudget)
		}
		return nil
	case <-ctx.Done():
	}
	stopPoll()
	return stopMount(mnt, stk, served, signalName(interruptedSignal(ctx)))
}

// interruptedSignal is the signal that ended ctx (os.Interrupt when the
// context ended otherwise).
func interruptedSignal(ctx context.Context) os.Signal {
	var i interrupted
	if errors.As(context.Cause(ctx), &i) {
		return i.sig
	}
	return os.Interrupt
}

// mountStorage is what stopMount closes: a table's stack, or the tables
// a catalog mount opened (catalogTables).
type mountStorage interface {
	CloseStorage() error
	InFlight() int64
	Close() error
}

// mountStopBudget bounds stopMount: unmounting, waiting for the requests in
// flight and closing the cache. unmountBudget is the part spent on plain
// unmounts before the mount point is detached lazily.
const (
	mountStopBudget = 8 * time.Second
	unmountBudget   = 4 * time.Second
)

// stopMount unmounts after a signal, within mountStopBudget whatever the
// requests in flight do. What used to keep the process alive for good: a
// request stuck in storage (a read blocked in the kernel) holds go-fuse's
// serve loop, so server.Unmount (which waits for the loop after a
// successful unmount) and server.Wait never returned, nor did the cache's
// Close (which waits for its fetches), and after an unmount from outside
// the unmount was retried on a mount point no longer mounted. Now: the
// storage is closed first, so requests reading it fail at once (EIO); the
// mount point is unmounted with fusermount3 (or umount(2)), not through
// go-fuse, only while it is still mounted, and detached lazily when it
// stays busy; the serve loop (or, once detached, the storage calls in
// flight) and the cache get what is left of the budget, and when requests
// are still stuck in storage then, deltafs exits without them, saying so.
func stopMount(mnt string, stk mountStorage, served <-chan struct{}, sig string) error {
	deadline := time.Now().Add(mountStopBudget)
	slog.Info("unmounting", "mountpoint", mnt, "signal", sig)
	_ = stk.CloseStorage()
	detached, err := unmountOrDetach(mnt, served)
	if err != nil {
		return err
	}
	stuck := fmt.Errorf("unmounted %s, but requests still stuck in storage %s after %s: exiting without them", mnt, mountStopBudget, sig)
	if !drained(stk, served, detached, deadline) || !closeWithin(stk, time.Until(deadline)) {
		return stuck
	}
	return nil
}

// unmountOrDetach unmounts mnt while it is mounted, retrying while files
// are open under it (a reader ended by the same Ctrl-C closes them within
// moments) for unmountBudget, then detaches it lazily. detached is true
// when the mount point is gone but the kernel may keep the connection (and
// the serve loop) until the last open file closes: after a lazy detach, or
// an unmount from outside (perhaps lazy).
func unmountOrDetach(mnt string, served <-chan struct{}) (detached bool, err error) {
	if !fusefs.Mounted(mnt) {
		return true, nil
	}
	busyUntil := time.Now().Add(unmountBudget)
	for attempt := 0; fusefs.Mounted(mnt); attempt++ {
		err := runUnmount(mnt, false)
		if err == nil {
			return false, nil
		}
		busy := errors.Is(err, fusefs.ErrBusy)
		if !busy || time.Now().After(busyUntil) {
			if lerr := runUnmount(mnt, true); lerr != nil {
				return false, fmt.Errorf("%v; lazy unmount: %v", err, lerr)
			}
			if busy {
				slog.Warn("mount point still busy: detached it lazily; the files open under it fail from now on", "mountpoint", mnt)
			} else {
				slog.Warn("unmount failed: detached the mount point lazily", "mountpoint", mnt, "err", err)
			}
			return true, nil
		}
		if attempt == 0 {
			slog.Warn(fmt.Sprintf("mount point busy: files are open under it; close them, or it is detached lazily in %s", unmountBudget), "mountpoint", mnt)
		}
		select {
		case <-served:
			return false, nil // the kernel ended the connection: unmounted meanwhile
		case <-time.After(250 * time.Millisecond):
		}
	}
	return true, nil // unmounted from outside meanwhile
}

// drained waits until the serve loop has ended or, once the mount point is
// detached (the loop then lasts as long as a file stays open under it),
// until no storage call is in flight; false when deadline passed first.
func drained(stk mountStorage, served <-chan struct{}, detached bool, deadline time.Time) bool {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !detached || stk.InFlight() > 0 {
		select {
		case <-served:
			return true
		case <-timeout.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

// closeWithin closes the stack, giving up after d (the cache's Close waits
// for its fills, which a read stuck in the kernel holds): false when it
// did not finish in time.
func closeWithin(stk mountStorage, d time.Duration) bool {
	closed := make(chan struct{})
	go func() {
		_ = stk.Close()
		close(closed)
	}()
	select {
	case <-closed:
		return true
	case <-time.After(max(d, 0)):
		return false
	}
}

// kernelInodes turns --kernel-inodes into fusefs.Options.KernelInodes (whose
// 0 means the default and negative means none).
func kernelInodes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// mountStats is MOUNT/.deltafs/stats. Bytes and reads are counted once,
// by the table's storage; data_bytes_read and data_reads, the names the
// page fetcher's own count had, are kept and give the same data-file
// figures.
func mountStats(root *fusefs.Root, t *table.Table) any {
	out := root.DefaultStats()
	fs := t.Fetcher.Stats()
	n := t.Counts()
	out["storage"] = map[string]any{
		"bytes_read":           n.Bytes,
		"reads":                n.Reads,
		"data_file_bytes_read": n.DataFileBytes,
		"data_file_reads":      n.DataFileReads,
		"data_bytes_read":      n.DataFileBytes,
		"data_reads":           n.DataFileReads,
		"files_opened":         fs.FilesOpened,
		"pages_decoded":        fs.PagesDecoded,
		"pages_spilled":        fs.PagesSpilled,
		"pages_streamed":       fs.PagesStreamed,
	}
	out["cache"] = t.Cache.Stats()
	// The cloud backend's requests by kind, retries and bytes fetched,
	// under any wrapping (a catalog's table holds its backend).
	backend := t.Store
	for {
		u, ok := backend.(interface{ Unwrap() storage.Storage })
		if !ok {
			break
		}
		backend = u.Unwrap()
	}
	if r, ok := backend.(remote.Reporter); ok {
		out[r.Service()] = r.Stats()
	}
	return out
}
