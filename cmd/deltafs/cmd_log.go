package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

func init() { rootCmd.AddCommand(newLogCmd()) }

// logOptions are the flags of `deltafs log`.
type logOptions struct {
	JSON  bool
	Where string
}

func (o *logOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.JSON, "json", false, "print one JSON object per version")
	f.StringVar(&o.Where, "where", "", whereHelp+"; FILES and ROWS then count the files read and the rows that match")
}

func newLogCmd() *cobra.Command {
	var o logOptions
	c := &cobra.Command{
		Use:   "log TABLE [--json]",
		Short: "List every readable version of a table",
		Long: `List every readable version of a Delta table, oldest first: the version, its commit time
(the in-commit timestamp where the table enables them, else the commit file's modification
time: the time that timestamp-based time travel uses), the operation, and the live data
files and live rows after it. Live rows come from the log's statistics, less the rows that
deletion vectors remove; a data file whose add action has no row count is counted once
from its Parquet footer.

The readable versions run from the earliest one the log can still reconstruct (0, or the
oldest checkpoint after which no commit is missing) to the latest. The log is read once,
one commit per version.

With --json, each version is one line:
  {"version":3,"timestamp":1673493662988,"operation":"WRITE","files":1,"rows":5}
timestamp is in Unix milliseconds. Each time printed (timestamp, or the COMMITTED column
as it is written), given to --at of cat or warm or to a mount's at/, selects its version.

Exit status: 0 on success, 1 on any error (one line on stderr, naming the table, the
version and the file at fault; versions before it are printed), 2 on bad usage.`,
		Example: `  deltafs log /data/table
  deltafs log s3://bucket/table --json`,
		Args: positional("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLog(cmd.Context(), cmd.OutOrStdout(), args[0], o)
		},
	}
	o.AddFlags(c.Flags())
	return c
}

// logLine is one version in --json output. Rows is a pointer so that a
// reader of the format may meet null (older deltafs printed it for files
// without statistics); this one always counts.
type logLine struct {
	Version   int64  `json:"version"`
	Timestamp int64  `json:"timestamp"`
	Operation string `json:"operation"`
	Files     int    `json:"files"`
	Rows      *int64 `json:"rows"`
}

func runLog(ctx context.Context, w io.Writer, location string, o logOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	where, err := parseWhere(o.Where)
	if err != nil {
		return usageError{err}
	}
	t, err := openTable(ctx, location)
	if err != nil {
		return err
	}
	defer t.Close()
	tbl := t.Log
	rows := scan.FooterRows(tbl.Storage())
	if where != nil {
		return logWhere(ctx, w, tbl, where, o.JSON)
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		return tbl.History(ctx, rows, func(vs snapshot.VersionStats) error {
			l := logLine{Version: vs.Version, Timestamp: vs.Timestamp.UnixMilli(), Operation: vs.Operation, Files: vs.Files}
			if vs.Rows >= 0 {
				l.Rows = &vs.Rows
			}
			return enc.Encode(l)
		})
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tCOMMITTED (UTC)\tOPERATION\tFILES\tROWS")
	n := 0
	err = tbl.History(ctx, rows, func(vs snapshot.VersionStats) error {
		rows := "-"
		if vs.Rows >= 0 {
			rows = strconv.FormatInt(vs.Rows, 10)
		}
		op := vs.Operation
		if op == "" {
			op = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", vs.Version, vs.Timestamp.UTC().Format(snapshot.LogTimeLayout), op, vs.Files, rows)
		// Keep memory bounded on long logs: columns are aligned per
		// block of lines.
		if n++; n%4096 == 0 {
			return tw.Flush()
		}
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// logWhere is log with --where: for every readable version, the data
// files the filter reads (not pruned or skipped) and the live rows that
// match. A file's count is kept across versions (by path and deletion
// vector), so each file is read once.
func logWhere(ctx context.Context, w io.Writer, tbl *snapshot.Log, where *filter.Expr, asJSON bool) error {
	versions, err := tbl.Versions(ctx)
	if err != nil {
		return err
	}
	counted := map[string]int64{}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	enc := json.NewEncoder(w)
	if !asJSON {
		fmt.Fprintln(tw, "VERSION\tCOMMITTED (UTC)\tOPERATION\tFILES\tROWS")
	}
	for i, vi := range versions {
		snap, err := tbl.Snapshot(ctx, vi.Version)
		if err != nil {
			tw.Flush()
			return err
		}
		flt, err := filter.Bind(where, snap)
		if err != nil {
			tw.Flush()
			return fmt.Errorf("%s version %d: %w", tbl.Location(), snap.Version, err)
		}
		files, rows := 0, int64(0)
		for _, f := range snap.Files {
			d := flt.Decide(snap, f)
			if d == filter.Pruned || d == filter.Skipped {
				continue
			}
			files++
			key := flt.Key() + "\x00" + f.Path + "\x00" + f.DeletionVector.UniqueID()
			n, ok := counted[key]
			if !ok {
				if n, err = matchingRows(ctx, snap, f, flt, d); err != nil {
					tw.Flush()
					return scanErr(tbl.Location(), snap.Version, err)
				}
				counted[key] = n
			}
			rows += n
		}
		if asJSON {
			if err := enc.Encode(logLine{Version: snap.Version, Timestamp: snap.Timestamp.UnixMilli(), Operation: snap.CommitInfo.Operation, Files: files, Rows: &rows}); err != nil {
				return err
			}
			continue
		}
		op := snap.CommitInfo.Operation
		if op == "" {
			op = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\n", snap.Version, snap.Timestamp.UTC().Format(snapshot.LogTimeLayout), op, files, rows)
		if (i+1)%4096 == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return tw.Flush()
}

// matchingRows counts the live rows of f the filter keeps: all of them
// when the log says so (d is filter.All and the log counts them), else
// by reading the filter's columns.
func matchingRows(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, flt *filter.Filter, d filter.Decision) (int64, error) {
	if d == filter.All && f.LiveRows() >= 0 {
		return f.LiveRows(), nil
	}
	sc, err := scan.New(snap, flt.ColumnNames())
	if err != nil {
		return 0, err
	}
	at := make([]int, len(flt.Columns()))
	for i := range at {
		at[i] = i
	}
	var n int64
	var keep []bool
	err = sc.FileColumns(ctx, f, func(b *scan.Batch) error {
		if d == filter.All {
			n += int64(len(b.Rows))
			return nil
		}
		keep = append(keep[:0], make([]bool, len(b.Rows))...)
		flt.Match(b, at, keep)
		for _, k := range keep {
			if k {
				n++
			}
		}
		return nil
	})
	return n, err
}
