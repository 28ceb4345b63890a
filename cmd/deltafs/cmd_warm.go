package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/table"
)

func init() { rootCmd.AddCommand(newWarmCmd()) }

// warmOptions are the flags of `deltafs warm`.
type warmOptions struct {
	specFlags
	cacheFlags
	versionFlags
	shard    int
	parallel int
	quiet    bool
}

func newWarmCmd() *cobra.Command {
	var o warmOptions
	c := &cobra.Command{
		Use:   "warm TABLE (--version N | --at TIME) [--shard K] [flags]",
		Short: "Fill the disk cache with one version (or one shard of it) ahead of training",
		Long: `Read every sample of a version, or of one shard of it, into the disk cache, so
that a mount with the same --cache-dir and sample flags reads nothing from the
table's data files for them: the pages of the data column, each data file's
footer and page index, and each data file's sample index.

The sample flags (--id-column, --image, --class-column, --shards, ...) and the
cache flags must be those the mount will use. A progress bar (samples, bytes,
rate, ETA) goes to stderr.

TIME for --at is Unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z) or a time as
` + "`deltafs log`" + ` prints it, in UTC ("2024-05-01 12:00:00.000").

Every cache entry the pass reads is counted, and checked on disk at the end: the
command succeeds only when all are there, so that the mount really reads nothing
from the data files. When they need more than --cache-size the pass stops as soon
as it knows, and says how much is needed (in proportion to the samples done); when
they fit but were not all kept (a disk too full, write errors, another process
evicting), it says so.

Exit status: 0 when every entry the mount needs is in the disk cache, 1 on any
error or when the data does not fit or was not kept (one line on stderr), 2 on
bad usage.`,
		Example: `  deltafs warm /data/mnist --version 3 --image 28x28 --cache-dir /nvme/deltafs
  deltafs warm s3://bucket/table --at 2024-05-01T12:00:00Z --shards 8 --shard 2`,
		Args: positional("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error { return runWarm(cmd, args[0], &o) },
	}
	f := c.Flags()
	o.versionFlags.addFlags(f, "warm", false)
	o.shard = -1
	f.Var(unsetInt[int]{&o.shard}, "shard", "warm only this shard (0 .. --shards-1; default: all)")
	f.IntVar(&o.parallel, "parallel", 4, "samples read at once")
	f.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	o.specFlags.addFlags(f)
	o.cacheFlags.addFlags(f)
	return c
}

func runWarm(cmd *cobra.Command, location string, o *warmOptions) error {
	ctx := cmd.Context()
	flags := cmd.Flags()
	if err := o.versionFlags.check(cmd, true); err != nil {
		return err
	}
	if o.shard >= o.Shards || (flags.Changed("shard") && o.shard < 0) {
		return usageError{fmt.Errorf("--shard %d: want 0 .. %d (--shards %d)", o.shard, o.Shards-1, o.Shards)}
	}
	if o.parallel < 1 {
		return usageError{fmt.Errorf("--parallel %d: want at least 1", o.parallel)}
	}
	if o.CacheDir == "none" {
		return usageError{errors.New("warm: --cache-dir none: there is no disk cache to fill")}
	}
	stk, err := openStack(ctx, location, &o.specFlags, &o.cacheFlags)
	if err != nil {
		return err
	}
	defer stk.Close()
	version, err := o.resolve(ctx, stk.Log)
	if err != nil {
		return table.WithLocation(location, err)
	}
	// The snapshot first: its error names the table and version once.
	snap, err := stk.Log.Snapshot(ctx, version)
	if err != nil {
		return table.WithLocation(location, err)
	}
	ver, err := stk.Samples.Version(ctx, version)
	if err != nil {
		return table.WithLocation(location, err)
	}
	if snap.Version != stk.Latest.Version {
		if err := checkImage(ctx, location, ver); err != nil {
			return err
		}
	}
	// From here on, every cache entry read is one the mount will read.
	stk.ledger.start()
	shards := []int{o.shard}
	what := fmt.Sprintf("%s version %d shard %d", location, version, o.shard)
	if o.shard < 0 {
		shards = shards[:0]
		for k := range ver.Shards() {
			shards = append(shards, k)
		}
		what = fmt.Sprintf("%s version %d", location, version)
	}
	start := time.Now()
	var built []*sample.Shard
	var total, totalBytes int64
	for _, k := range shards {
		sh, err := ver.Shard(ctx, k)
		if err != nil {
			return fileErrorLine(location, err)
		}
		built = append(built, sh)
		total += int64(sh.Len())
		for pos := range sh.Len() {
			totalBytes += sh.Size(pos)
		}
	}
	slog.Info("warming", "table", location, "version", version, "shards", shards, "samples", total,
		"bytes", humanize.IBytes(uint64(totalBytes)), "cache", stk.cacheDir, "index", time.Since(start).Round(time.Millisecond))
	var out io.Writer = os.Stderr
	if o.quiet {
		out = io.Discard
	}
	bar := progressbar.NewOptions64(totalBytes,
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetDescription(fmt.Sprintf("0/%d samples", total)),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }),
	)
	// A pass that outgrows the budget stops there: the cache would evict
	// its own first entries, and the rest of the reads would be wasted.
	fillCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var done atomic.Int64
	for _, sh := range built {
		err := warmShard(fillCtx, sh, o.parallel, func(size int64) {
			n := done.Add(1)
			if n%256 == 0 || n == total {
				bar.Describe(fmt.Sprintf("%d/%d samples", n, total))
			}
			_ = bar.Add64(size)
			if _, need := stk.ledger.needed(); need > stk.budget {
				stop(errTooBig)
			}
		})
		if err == nil {
			continue
		}
		_ = bar.Exit()
		fmt.Fprintln(out)
		if errors.Is(context.Cause(fillCtx), errTooBig) && ctx.Err() == nil {
			return tooBig(what, stk, done.Load(), total)
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return err
		}
		return fileErrorLine(location, err)
	}
	_ = bar.Finish()
	if _, need := stk.ledger.needed(); need > stk.budget {
		return tooBig(what, stk, total, total)
	}
	// Count what the disk cache kept: a mount reads from the data files
	// whatever is missing.
	entries, need := stk.ledger.needed()
	kept, keptBytes := stk.ledger.kept(stk.Cache)
	if kept < entries {
		return notKept(what, stk, entries, need, kept, keptBytes)
	}
	fs := stk.Fetcher.Stats()
	slog.Info("warmed", "samples", total, "bytes", humanize.IBytes(uint64(totalBytes)), "took", time.Since(start).Round(time.Millisecond),
		"read_from_storage", humanize.IBytes(uint64(stk.Counts().DataFileBytes)), "pages", fs.PagesDecoded,
		"cache_entries", entries, "cache_bytes", humanize.IBytes(uint64(need)), "cache_budget", humanize.IBytes(uint64(stk.budget)))
	return nil
}

// errTooBig stops a warm pass whose entries outgrew the disk budget.
var errTooBig = errors.New("the disk cache budget is too small")

// tooBig is the error of a pass that needs more than the budget, after
// done of total samples: how much it needs, estimated in proportion when
// it stopped early.
func tooBig(what string, stk *stack, done, total int64) error {
	_, need := stk.ledger.needed()
	budget := humanize.IBytes(uint64(stk.budget))
	if done < total && done > 0 {
		return fmt.Errorf("%s does not fit the disk cache: its first %d of %d samples already need more than --cache-size %s (about %s for all); give a larger --cache-size, the same to the mount",
			what, done, total, budget, humanize.IBytes(uint64(float64(need)*float64(total)/float64(done))))
	}
	return fmt.Errorf("%s does not fit the disk cache: it needs %s, more than --cache-size %s; give a larger --cache-size, the same to the mount",
		what, humanize.IBytes(uint64(need)), budget)
}

// notKept is the error of a pass that fits the budget but whose entries
// are not all on disk afterwards, with the likely cause.
func notKept(what string, stk *stack, entries int, need int64, kept int, keptBytes int64) error {
	st := stk.Cache.Stats()
	// The cache makes room below its free-space floor by evicting, the
	// pass's own entries too: look at the disk rather than at the counters.
	var fs syscall.Statfs_t
	tooFull := syscall.Statfs(stk.Cache.Dir(), &fs) == nil &&
		float64(fs.Bavail)*float64(fs.Bsize) < cache.DefaultMinFreeFraction*float64(fs.Blocks)*float64(fs.Bsize)+float64(need-keptBytes)
	var why string
	switch {
	case st.FloorSkips > 0 || tooFull:
		why = fmt.Sprintf("the filesystem of %s is too full (the cache keeps %.0f%% of it free)", stk.cacheDir, 100*cache.DefaultMinFreeFraction)
	case st.DiskWriteErrors > 0:
		why = fmt.Sprintf("%d entries could not be written (see the log)", st.DiskWriteErrors)
	default:
		why = "entries were evicted meanwhile by another process using " + stk.cacheDir + " (with a smaller --cache-size?)"
	}
	return fmt.Errorf("%s: the disk cache kept %d of %d entries (%s of %s): %s; a mount would read the rest from the data files",
		what, kept, entries, humanize.IBytes(uint64(keptBytes)), humanize.IBytes(uint64(need)), why)
}

// warmShard fills the cache for every sample of sh, parallel at once, in
// shard order; done gets each sample's size. The first error stops it.
func warmShard(ctx context.Context, sh *sample.Shard, parallel int, done func(size int64)) error {
	g, gctx := errgroup.WithContext(ctx)
	const block = 64 // consecutive samples per task: they share pages
	next := atomic.Int64{}
	for range parallel {
		g.Go(func() error {
			for {
				lo := int(next.Add(block)) - block
				if lo >= sh.Len() {
					return nil
				}
				for pos := lo; pos < min(lo+block, sh.Len()); pos++ {
					if err := sh.Fill(gctx, pos); err != nil {
						// Names the data file (and version): enough.
						return err
					}
					done(sh.Size(pos))
				}
			}
		})
	}
	return g.Wait()
}
