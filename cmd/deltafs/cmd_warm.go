package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/sample"
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

Exit status: 0 when every sample is cached, 1 on any error (one line on stderr),
2 on bad usage.`,
		Example: `  deltafs warm /data/mnist --version 3 --image 28x28 --cache-dir /nvme/deltafs
  deltafs warm s3://bucket/table --at 2024-05-01T12:00:00Z --shards 8 --shard 2`,
		Args: positional("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error { return runWarm(cmd, args[0], &o) },
	}
	f := c.Flags()
	o.versionFlags.addFlags(f, "warm", false)
	f.IntVar(&o.shard, "shard", -1, "warm only this shard (0 .. --shards-1; default: all)")
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
	version, err := o.resolve(ctx, stk.table)
	if err != nil {
		return withLocation(location, err)
	}
	ver, err := stk.samples.Version(ctx, version)
	if err != nil {
		return withLocation(location, err)
	}
	shards := []int{o.shard}
	if o.shard < 0 {
		shards = shards[:0]
		for k := range ver.Shards() {
			shards = append(shards, k)
		}
	}
	start := time.Now()
	var built []*sample.Shard
	var total, totalBytes int64
	for _, k := range shards {
		sh, err := ver.Shard(ctx, k)
		if err != nil {
			return fmt.Errorf("%s version %d shard %d: %w", location, version, k, err)
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
	var done atomic.Int64
	for i, sh := range built {
		if err := warmShard(ctx, sh, o.parallel, func(size int64) {
			n := done.Add(1)
			if n%256 == 0 || n == total {
				bar.Describe(fmt.Sprintf("%d/%d samples", n, total))
			}
			_ = bar.Add64(size)
		}); err != nil {
			_ = bar.Exit()
			fmt.Fprintln(out)
			return fmt.Errorf("%s version %d shard %d: %w", location, version, shards[i], err)
		}
	}
	_ = bar.Finish()
	fs := stk.fetcher.Stats()
	slog.Info("warmed", "samples", total, "bytes", humanize.IBytes(uint64(totalBytes)), "took", time.Since(start).Round(time.Millisecond),
		"read_from_storage", humanize.IBytes(uint64(stk.counted.dataBytes.Load())), "pages", fs.PagesDecoded)
	return nil
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
						return fmt.Errorf("sample %s: %w", sh.Path(pos), err)
					}
					done(sh.Size(pos))
				}
			}
		})
	}
	return g.Wait()
}
