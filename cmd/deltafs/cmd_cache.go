package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/cache"
)

func init() { rootCmd.AddCommand(newCacheCmd()) }

// cacheOptions are the flags of `deltafs cache stats|clear`.
type cacheOptions struct {
	Dir string // Options.Dir of the cache: the parent of deltafs-cache-v1
}

func (o *cacheOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Dir, "cache-dir", "", "cache directory, as given to the mount (default: the user cache directory's deltafs, e.g. ~/.cache/deltafs)")
}

// dir resolves the default.
func (o *cacheOptions) dir() (string, error) {
	if o.Dir != "" {
		return o.Dir, nil
	}
	return cache.DefaultDir()
}

func cacheNoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

func newCacheCmd() *cobra.Command {
	var o cacheOptions
	c := &cobra.Command{
		Use:   "cache",
		Short: "Inspect or clear deltafs's disk cache",
		Long: `deltafs keeps the pages it reads from a table in a disk cache, so that later epochs and
later mounts read them locally. The cache lives in DIR/deltafs-cache-v1 (DIR: --cache-dir,
default the user cache directory's deltafs, e.g. ~/.cache/deltafs); these commands touch
nothing else.

Exit status: 0 on success, 1 on any error, 2 on bad usage.`,
	}
	o.AddFlags(c.PersistentFlags())
	stats := &cobra.Command{
		Use:   "stats [--cache-dir DIR]",
		Short: "Print the cache's entries, bytes, budget and the free disk space",
		Long: `Print what the disk cache holds: entries and their bytes, the byte budget and free-space
floor the last mount used, the free space of its filesystem, and leftover temp files. It
reads only file names and sizes; a running mount is not disturbed.`,
		Args: cacheNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := o.dir()
			if err != nil {
				return err
			}
			return runCacheStats(cmd.OutOrStdout(), dir)
		},
	}
	clear := &cobra.Command{
		Use:   "clear [--cache-dir DIR]",
		Short: "Remove the cache's entries",
		Long: `Remove every cache entry, temp file and the cache's own bookkeeping from
DIR/deltafs-cache-v1, and the directory itself when that leaves it empty. Files the
cache does not own are never removed. A running mount keeps working: it sees misses
and fetches again.`,
		Args: cacheNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := o.dir()
			if err != nil {
				return err
			}
			return runCacheClear(cmd.OutOrStdout(), dir)
		},
	}
	c.AddCommand(stats, clear)
	return c
}

func runCacheStats(w io.Writer, dir string) error {
	u, err := cache.DiskUsage(dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "directory\t%s\n", u.Root)
	if !u.Exists {
		fmt.Fprintf(tw, "entries\t0 (no cache here yet)\n")
	} else {
		fmt.Fprintf(tw, "entries\t%s\n", humanize.Comma(u.Entries))
		fmt.Fprintf(tw, "size\t%s (%d bytes)\n", humanize.IBytes(uint64(u.Bytes)), u.Bytes)
	}
	switch {
	case u.Budget > 0:
		pct := ""
		if u.Exists && u.Budget > 0 {
			pct = fmt.Sprintf(", %.0f%% used", 100*float64(u.Bytes)/float64(u.Budget))
		}
		fmt.Fprintf(tw, "budget\t%s%s, keeping %.0f%% of the disk free (as last opened)\n", humanize.IBytes(uint64(u.Budget)), pct, 100*max(u.MinFreeFraction, 0))
	default:
		fmt.Fprintf(tw, "budget\tunknown (not opened by a mount yet; default %s, keeping %.0f%% of the disk free)\n",
			humanize.IBytes(cache.DefaultDiskBytes), 100*cache.DefaultMinFreeFraction)
	}
	if u.TotalBytes > 0 {
		fmt.Fprintf(tw, "disk free\t%s of %s (%.1f%%)\n", humanize.IBytes(u.FreeBytes), humanize.IBytes(u.TotalBytes), 100*float64(u.FreeBytes)/float64(u.TotalBytes))
	}
	if u.TempFiles > 0 {
		fmt.Fprintf(tw, "temp files\t%d, %s (writes in progress, or left by a crash: the next mount removes those)\n", u.TempFiles, humanize.IBytes(uint64(u.TempBytes)))
	}
	if u.OtherFiles > 0 {
		fmt.Fprintf(tw, "other files\t%d (not the cache's; left alone)\n", u.OtherFiles)
	}
	return tw.Flush()
}

func runCacheClear(w io.Writer, dir string) error {
	before, err := cache.DiskUsage(dir)
	if err != nil {
		return err
	}
	if !before.Exists {
		fmt.Fprintf(w, "no cache in %s\n", before.Root)
		return nil
	}
	if err := cache.Clear(dir); err != nil {
		return err
	}
	after, err := cache.DiskUsage(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "removed %s entries (%s) from %s\n", humanize.Comma(before.Entries-after.Entries),
		humanize.IBytes(uint64(max(before.Bytes-after.Bytes, 0))), before.Root)
	if after.Entries > 0 {
		fmt.Fprintf(w, "%d entries were written meanwhile (a running mount?)\n", after.Entries)
	}
	if after.OtherFiles > 0 {
		fmt.Fprintf(w, "left %d files that are not the cache's\n", after.OtherFiles)
	}
	return nil
}
