package main

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

func init() { rootCmd.AddCommand(newCatCmd()) }

// catOptions are the flags of `deltafs cat`.
type catOptions struct {
	versionFlags
	columns string
	limit   int64
	where   string
}

func newCatCmd() *cobra.Command {
	var o catOptions
	c := &cobra.Command{
		Use:   "cat TABLE",
		Short: "Print the live rows of a table version as JSON lines",
		Long: `Print the live rows of one version of a Delta table (the latest by default), one JSON
object per line, with the table's logical column names in schema order: the data files
in snapshot order, the rows of each in file order, rows deleted by deletion vectors left
out. Each line is exactly what a mount serves as a tabular row's sample file.

Values: numbers as JSON numbers (decimals exactly), binary as base64, dates as
"2006-01-02", timestamps as "2006-01-02T15:04:05.000000Z" (UTC), timestamp_ntz without
a zone, NaN and infinities as strings, structs as objects, maps with string keys as
objects and other maps as arrays of {"key","value"}.

TIME for --at is Unix milliseconds (1714564800000), RFC 3339 (2024-05-01T12:00:00Z,
fraction and offset optional) or a time as ` + "`deltafs log`" + ` prints it, in UTC
("2024-05-01 12:00:00.000"); it selects the latest version committed at or before it, so
each time ` + "`deltafs log`" + ` prints selects its own version.

Exit status: 0 on success, 1 on any error (one line on stderr), 2 on bad usage.`,
		Example: `  deltafs cat /data/mnist --limit 3
  deltafs cat s3://bucket/table --version 12 --columns id,label
  deltafs cat /data/table --at 2024-05-01T12:00:00Z`,
		Args: positional("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error { return runCat(cmd, args[0], &o) },
	}
	f := c.Flags()
	o.versionFlags.addFlags(f, "print", true)
	f.StringVar(&o.columns, "columns", "", "comma-separated columns to print, in that order (default: all)")
	o.limit = -1
	f.Var(unsetInt[int64]{&o.limit}, "limit", "print at most this many rows (default: all)")
	f.StringVar(&o.where, "where", "", whereHelp)
	return c
}

// errLimit stops a scan once --limit rows are printed.
var errLimit = errors.New("limit reached")

func runCat(cmd *cobra.Command, location string, o *catOptions) error {
	ctx := cmd.Context()
	if err := o.versionFlags.check(cmd, false); err != nil {
		return err
	}
	columns, err := parseColumns(o.columns)
	if err != nil {
		return usageError{err}
	}
	where, err := parseWhere(o.where)
	if err != nil {
		return usageError{err}
	}

	t, err := openTable(ctx, location)
	if err != nil {
		return err
	}
	defer t.Close()
	tbl := t.Log
	version, err := o.resolve(ctx, tbl)
	if err != nil {
		return err
	}
	snap, err := tbl.Snapshot(ctx, version)
	if err != nil {
		return err
	}
	if where != nil {
		return catWhere(cmd, tbl.Location(), snap, columns, where, o.limit)
	}
	sc, err := scan.New(snap, columns)
	if err != nil {
		return scanErr(tbl.Location(), snap.Version, err)
	}

	if o.limit == 0 {
		return nil
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
	var buf []byte
	n := int64(0)
	err = sc.All(ctx, func(_ *snapshot.AddFile, _ int64, row []any) error {
		buf = sc.AppendJSON(buf[:0], row)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if n++; o.limit > 0 && n >= o.limit {
			return errLimit
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		w.Flush()
		return scanErr(tbl.Location(), snap.Version, err)
	}
	return w.Flush()
}

// scanErr gives a scan error the command line's shape, "TABLE version N:
// FILE: cause", or "TABLE version N: cause" when no file is at fault.
func scanErr(table string, version int64, err error) error {
	if se := (*snapshot.Error)(nil); errors.As(err, &se) {
		return se // names the table, version and file itself
	}
	var fe *scan.FileError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s version %d: %s: %w", table, fe.Version, fe.Path, unnamed{fe.Path, fe.Err})
	}
	return fmt.Errorf("%s version %d: %w", table, version, err)
}

// parseColumns reads --columns: names separated by commas.
func parseColumns(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			return nil, fmt.Errorf("--columns %q: empty column name", s)
		}
		out = append(out, c)
	}
	return out, nil
}

// catWhere is cat with --where: the data files the filter prunes or skips
// are not opened; the rows of the others are read with the filter's
// columns (added to --columns when absent, not printed) and printed when
// the filter holds.
func catWhere(cmd *cobra.Command, location string, snap *snapshot.Snapshot, columns []string, where *filter.Expr, limit int64) error {
	ctx := cmd.Context()
	flt, err := filter.Bind(where, snap)
	if err != nil {
		return fmt.Errorf("%s version %d: %w", location, snap.Version, err)
	}
	if columns == nil && snap.Schema != nil {
		columns = snap.Schema.Names()
	}
	out := len(columns)
	cols := append([]string(nil), columns...)
	at := whereColumns(&cols, flt)
	sc, err := scan.New(snap, cols)
	if err != nil {
		return scanErr(location, snap.Version, err)
	}
	fields := sc.Fields()[:out]
	if limit == 0 {
		return nil
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
	var buf []byte
	n := int64(0)
	for _, f := range snap.Files {
		d := flt.Decide(snap, f)
		if d == filter.Pruned || d == filter.Skipped {
			continue
		}
		err = sc.File(ctx, f, func(_ int64, row []any) error {
			if d == filter.Some && !flt.MatchRow(row, at) {
				return nil
			}
			buf = scan.AppendJSON(buf[:0], fields, row[:out])
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if n++; limit > 0 && n >= limit {
				return errLimit
			}
			return nil
		})
		if errors.Is(err, errLimit) {
			break
		}
		if err != nil {
			w.Flush()
			return scanErr(location, snap.Version, err)
		}
	}
	return w.Flush()
}

// whereColumns adds the filter's columns to cols where absent and
// returns the index in cols of each.
func whereColumns(cols *[]string, flt *filter.Filter) []int {
	var at []int
	for _, c := range flt.ColumnNames() {
		i := slices.Index(*cols, c)
		if i < 0 {
			*cols = append(*cols, c)
			i = len(*cols) - 1
		}
		at = append(at, i)
	}
	return at
}
