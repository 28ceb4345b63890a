package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/cache"
	dfs "github.com/deltafs/deltafs/fs"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/s3store"
)

func init() { rootCmd.AddCommand(newMountCmd()) }

// mountOptions are the flags of `deltafs mount`.
type mountOptions struct {
	IDColumn    string
	DataColumn  string
	Image       string
	ImageFormat string
	ClassColumn string
	Shards      int

	Refresh   time.Duration
	Immutable time.Duration

	MemCache  string
	CacheDir  string
	CacheSize string

	AllowOther bool
	Debug      bool
	CPUProfile string
}

func (o *mountOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.IDColumn, "id-column", "", "column naming the sample files (default: id, when the table has it; else <hash of data file>-<row>)")
	f.StringVar(&o.DataColumn, "data-column", "", "column holding each sample's bytes (default: the table's only binary column, else none); \"-\": none, each sample is its row as JSON")
	f.StringVar(&o.Image, "image", "", "the data column holds raw uint8 pixels of shape HxW[xC]: encode each as an image")
	f.StringVar(&o.ImageFormat, "image-format", "", "image encoding with --image: png (default) or pnm (PGM/PPM)")
	f.StringVar(&o.ClassColumn, "class-column", "", "put samples in class folders named by this column (ImageFolder layout)")
	f.IntVar(&o.Shards, "shards", 1, "split every version into this many shards of equal size (within one sample)")
	f.DurationVar(&o.Refresh, "refresh", 10*time.Second, "how often to look for new commits (also the kernel timeout of latest, version/ and at/)")
	f.DurationVar(&o.Immutable, "immutable-timeout", 24*time.Hour, "kernel entry/attribute timeout under version/N (versions never change)")
	f.StringVar(&o.MemCache, "mem-cache", "256MiB", "memory cache for decoded Parquet pages")
	f.StringVar(&o.CacheDir, "cache-dir", "", `disk cache directory, kept across mounts (default: the user cache directory's deltafs, e.g. ~/.cache/deltafs; "none": no disk cache)`)
	f.StringVar(&o.CacheSize, "cache-size", humanize.IBytes(cache.DefaultDiskBytes), "disk cache budget")
	f.BoolVar(&o.AllowOther, "allow-other", false, "let other users read the mount (needs user_allow_other in /etc/fuse.conf when not root)")
	f.BoolVar(&o.Debug, "fuse-debug", false, "log every FUSE request")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the server to this file until unmount")
	_ = f.MarkHidden("cpuprofile")
}

func (o *mountOptions) spec() (sample.Spec, error) {
	s := sample.Spec{IDColumn: o.IDColumn, DataColumn: o.DataColumn, ImageFormat: o.ImageFormat, ClassColumn: o.ClassColumn, Shards: o.Shards}
	if o.Image != "" {
		im, err := sample.ParseImage(o.Image)
		if err != nil {
			return s, fmt.Errorf("--image: %w", err)
		}
		s.Image = im
	}
	if o.Shards < 1 {
		return s, fmt.Errorf("--shards %d: want at least 1", o.Shards)
	}
	return s, s.Validate()
}

func newMountCmd() *cobra.Command {
	var o mountOptions
	c := &cobra.Command{
		Use:   "mount TABLE MOUNTPOINT [flags]",
		Short: "Mount every version of a table as sample files (foreground; Ctrl-C unmounts)",
		Long: `Mount a Delta table read-only at MOUNTPOINT:

  MOUNTPOINT/
    latest -> version/N        moves when the table gets a new commit (polled every --refresh)
    version/N/                 every readable version; new ones appear without a remount
      _commit.json _schema.json
      shard/K/                 K = 0 .. --shards-1
        _samples.tsv           one line per sample: path, bytes, class, id
        <id><ext>              one file per live row (or <class>/<id><ext> with --class-column)
    at/<time>                  link to the version current at <time> (RFC 3339 or Unix ms)
    .deltafs/stats             counters (JSON)

The table, its latest version and the sample flags are checked before mounting. The
mount runs in the foreground and logs to stderr; SIGINT or SIGTERM unmounts it.

Exit status: 0 after a clean unmount, 1 on any error (one line on stderr; nothing is
left mounted), 2 on bad usage.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("mount: want TABLE MOUNTPOINT, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMount(cmd.Context(), &o, args[0], args[1])
		},
	}
	o.AddFlags(c.Flags())
	return c
}

// newRows returns the row decoder (package scan) for a table.
var newRows = sample.ScanRows

func runMount(ctx context.Context, o *mountOptions, location, mnt string) error {
	spec, err := o.spec()
	if err != nil {
		return usageError{err}
	}
	memBytes, err := humanize.ParseBytes(o.MemCache)
	if err != nil {
		return usageError{fmt.Errorf("--mem-cache: %w", err)}
	}
	diskBytes, err := humanize.ParseBytes(o.CacheSize)
	if err != nil {
		return usageError{fmt.Errorf("--cache-size: %w", err)}
	}
	if o.Refresh <= 0 {
		return usageError{errors.New("--refresh must be positive")}
	}
	if err := dfs.CheckMountpoint(mnt); err != nil {
		return err
	}

	// Validate the table before mounting: it opens, lists, and its latest
	// version can be read (protocol) and fits the sample spec.
	if !strings.Contains(location, "://") {
		if _, err := os.Stat(location); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no such table: the directory does not exist", location)
		}
	}
	st, err := storage.Open(ctx, location, global.storage)
	if err != nil {
		return err
	}
	if c, ok := st.(io.Closer); ok {
		defer c.Close() // the S3 store's idle connections, after unmount
	}
	counted := &countingStorage{Storage: st}
	table, err := snapshot.Open(ctx, counted)
	if err != nil {
		return withLocation(location, err)
	}
	versions, err := table.Versions(ctx)
	if err != nil {
		return withLocation(location, err)
	}
	if len(versions) == 0 {
		return fmt.Errorf("%s: the table has no readable version", location)
	}
	latest, err := table.Snapshot(ctx, versions[len(versions)-1].Version)
	if err != nil {
		return withLocation(location, err)
	}
	describe, err := spec.Describe(latest)
	if err != nil {
		return fmt.Errorf("%s version %d: %w", location, latest.Version, err)
	}
	rows, err := newRows(table)
	if err != nil {
		return err
	}

	cacheOpts := cache.Options{MemBytes: int64(memBytes), DiskBytes: int64(diskBytes)}
	switch o.CacheDir {
	case "none":
	case "":
		if cacheOpts.Dir, err = cache.DefaultDir(); err != nil {
			return err
		}
	default:
		cacheOpts.Dir = o.CacheDir
	}
	pages, err := cache.New(cacheOpts)
	if err != nil {
		return err
	}
	defer pages.Close()
	blobs := cacheAdapter{c: pages, table: st.Location()}
	fetcher := sample.NewPageFetcher(counted, sample.PageFetcherOptions{Cache: blobs})
	samples, err := sample.New(sample.Options{Table: table, Rows: rows, Fetcher: fetcher, Spec: spec, Cache: blobs})
	if err != nil {
		return usageError{err}
	}
	var root *dfs.Root
	root, err = dfs.NewRoot(ctx, dfs.Options{
		Samples: samples, Refresh: o.Refresh, Immutable: o.Immutable,
		Stats: func() any { return mountStats(root, counted, fetcher, pages) },
	})
	if err != nil {
		return withLocation(location, err)
	}
	server, err := dfs.Mount(mnt, root, root.MountOptions(st.Location(), o.AllowOther, o.Debug))
	if err != nil {
		return fmt.Errorf("mount %s: %w", mnt, err)
	}
	slog.Info("mounted", "table", location, "mountpoint", mnt, "versions", len(versions), "latest", latest.Version,
		"spec", describe, "cache", cacheOpts.Dir, "refresh", o.Refresh)

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
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()
	go root.Run(pollCtx)
	served := make(chan struct{})
	go func() { server.Wait(); close(served) }()
	select {
	case <-served:
		slog.Info("unmounted from outside", "mountpoint", mnt)
		return nil
	case <-ctx.Done():
	}
	stopPoll()
	slog.Info("unmounting", "mountpoint", mnt)
	for attempt := 0; ; attempt++ {
		err := server.Unmount()
		if err == nil {
			break
		}
		if attempt == 20 {
			slog.Warn("mount point still busy: detaching it lazily", "mountpoint", mnt, "err", err)
			if out, lerr := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); lerr != nil {
				return fmt.Errorf("unmount %s: %v; lazy unmount: %v %s", mnt, err, lerr, strings.TrimSpace(string(out)))
			}
			break
		}
		if attempt == 0 {
			slog.Warn("mount point busy, retrying (close files under it)", "mountpoint", mnt, "err", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	<-served
	return nil
}

// withLocation prefixes err with the table location unless it names it.
func withLocation(location string, err error) error {
	if strings.Contains(err.Error(), location) {
		return err
	}
	return fmt.Errorf("%s: %w", location, err)
}

// cacheAdapter makes the two-tier cache the sample layer's BlobCache.
type cacheAdapter struct {
	c     *cache.Cache
	table string
}

func (a cacheAdapter) Get(ctx context.Context, k sample.CacheKey, fetch func(context.Context) ([]byte, error)) ([]byte, error) {
	return a.c.Get(ctx, cache.Key{Kind: k.Kind, Table: a.table, File: k.File, Version: k.Version, Column: k.Column, Unit: k.Unit}, fetch)
}

// countingStorage counts what is read from the table's storage.
type countingStorage struct {
	storage.Storage
	bytes, reads atomic.Int64
}

func (c *countingStorage) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	n, err := c.Storage.ReadAt(ctx, key, p, off)
	c.bytes.Add(int64(n))
	c.reads.Add(1)
	return n, err
}

// mountStats is MOUNT/.deltafs/stats.
func mountStats(root *dfs.Root, st *countingStorage, f *sample.PageFetcher, c *cache.Cache) any {
	out := root.DefaultStats()
	fs := f.Stats()
	out["storage"] = map[string]any{
		"bytes_read":      st.bytes.Load(),
		"reads":           st.reads.Load(),
		"data_bytes_read": fs.BytesRead,
		"data_reads":      fs.Reads,
		"files_opened":    fs.FilesOpened,
		"pages_decoded":   fs.PagesDecoded,
	}
	out["cache"] = c.Stats()
	if s3, ok := st.Storage.(interface{ Stats() s3store.Stats }); ok {
		out["s3"] = s3.Stats() // requests by kind, retries, bytes fetched
	}
	return out
}
