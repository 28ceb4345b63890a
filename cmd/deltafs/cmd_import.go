package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/importer"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

func init() { rootCmd.AddCommand(newImportCmd()) }

// importOptions are the flags of deltafs import.
type importOptions struct {
	mode        string
	rowsPerFile int
	maxFileSize string
}

func newImportCmd() *cobra.Command {
	var o importOptions
	c := &cobra.Command{
		Use:   "import SRC TABLE [--mode append|overwrite] [--rows-per-file N] [--max-file-size SIZE]",
		Short: "Write an ImageFolder tree or a NumPy .npy file as a new version of a Delta table",
		Long: `Import SRC as one new version of the Delta table at TABLE (a path or a URL such as
s3://bucket/table), creating the table when TABLE holds none.

SRC is either
  - a directory laid out as torchvision's ImageFolder (SRC/<class>/<image>): columns
    id (long), label (string: the class folder), path (string: e.g. cat/001.png) and
    content (binary: the image file's bytes, unchanged); or
  - a NumPy .npy file, optionally gzipped (.npy.gz): one column per field of a
    structured array (a plain array gives one column "data"); uint8 sub-arrays such
    as pixels (784,) become binary columns.

Ids: a source without an id column (ImageFolder, a .npy without an "id" field) gets
ids max(id)+1, max(id)+2, ... of the table (from 0 for a new table) in the order the
rows are written; a .npy "id" field is kept as it is.

Order: an ImageFolder tree's images are written in a fixed pseudo-random order (a
seeded shuffle of torchvision's order), not class by class, so that every shard of
a mount (--shards, contiguous row ranges) holds every class; the same tree always
gets the same order and ids. A .npy file's rows keep their order.

--mode append (the default) adds the rows; --mode overwrite replaces all the rows of
the table. The commit is atomic; when another writer commits first, the import
retries on the next version. Data files hold --rows-per-file rows each.

Every image must be a regular file (a symbolic link is followed): a named pipe, a
socket or a device fails the import, named, before any file is read; so does an
image larger than --max-file-size (each is read whole into memory). SIGINT or
SIGTERM stops the import promptly, before its commit: it says so, and names the data
files already written (no version names them; VACUUM removes them). Files and
directories are created with the usual modes less the umask (0644 and 0755 under
umask 022).

Prints the committed version and the number of rows.

Exit status: 0 on success, 1 on any error (one line on stderr), 2 on bad usage.`,
		Args: positional("SRC", "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.Context(), cmd.OutOrStdout(), o, args[0], args[1])
		},
	}
	f := c.Flags()
	f.StringVar(&o.mode, "mode", "append", "append the rows, or overwrite the table's rows")
	f.IntVar(&o.rowsPerFile, "rows-per-file", writer.DefaultRowsPerFile, "rows per Parquet data file")
	f.StringVar(&o.maxFileSize, "max-file-size", humanize.IBytes(importer.DefaultMaxFileSize), "largest image file imported (a larger one fails the import)")
	return c
}

func runImport(ctx context.Context, out io.Writer, o importOptions, src, table string) error {
	mode := writer.Mode(o.mode)
	if mode != writer.ModeAppend && mode != writer.ModeOverwrite {
		return usageError{fmt.Errorf("--mode %q: want append or overwrite", o.mode)}
	}
	if o.rowsPerFile <= 0 {
		return usageError{fmt.Errorf("--rows-per-file %d: want a positive number", o.rowsPerFile)}
	}
	maxSize, err := humanize.ParseBytes(o.maxFileSize)
	if err != nil || maxSize == 0 || maxSize > math.MaxInt64 {
		return usageError{fmt.Errorf("--max-file-size %q: want a positive size such as 1GiB", o.maxFileSize)}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	source, err := importer.Open(ctx, src, importer.Options{MaxFileSize: int64(maxSize)})
	if err != nil {
		return importFailed(ctx, "", src, table, err) // err names the source
	}
	defer source.Close()
	st, err := storage.Open(ctx, table, global.storage)
	if err != nil {
		return err
	}
	res, err := importer.Import(ctx, st, source, writer.Options{Mode: mode, RowsPerFile: o.rowsPerFile})
	if err != nil {
		return importFailed(ctx, "import "+src+": ", src, table, err) // err names the table, or the source's file
	}
	verb := "appended"
	switch {
	case res.Created:
		verb = "created the table with"
	case mode == writer.ModeOverwrite:
		verb = fmt.Sprintf("overwrote %d files with", res.Removed)
	}
	fmt.Fprintf(out, "version %d: %s %d rows in %d files (%s) in %.1fs\n",
		res.Version, verb, res.Rows, res.Files, importSizeString(res.Bytes), time.Since(start).Seconds())
	return nil
}

// maxOrphansNamed bounds the data files an import failure names.
const maxOrphansNamed = 10

// importFailed is the one line of a failed or interrupted import: the
// cause (or the signal), whether anything was committed, and the data files
// left behind. It wraps nothing: main would print a bare "interrupted"
// for an error wrapping context.Canceled.
func importFailed(ctx context.Context, prefix, src, table string, err error) error {
	msg := prefix + err.Error()
	if ierr := interruption(ctx); ierr != nil {
		msg = fmt.Sprintf("import %s into %s: %v", src, table, ierr)
	} else if errors.Is(err, storage.ErrTooLarge) {
		msg += " (--max-file-size)"
	}
	var ae *writer.AbortError
	if !errors.As(err, &ae) {
		if interruption(ctx) != nil {
			msg += ": nothing was committed"
		}
		return errors.New(msg)
	}
	if ae.MaybeCommitted >= 0 {
		msg += fmt.Sprintf(": the commit of version %d may have landed (check `deltafs log %s`)", ae.MaybeCommitted, table)
	} else {
		msg += ": nothing was committed"
	}
	if n := len(ae.Orphans); n > 0 {
		named := ae.Orphans[:min(n, maxOrphansNamed)]
		msg += fmt.Sprintf("; %d data files written before that are in no version (VACUUM removes them): %s", n, strings.Join(named, ", "))
		if n > len(named) {
			msg += fmt.Sprintf(" and %d more", n-len(named))
		}
	}
	return errors.New(msg)
}

// importSizeString prints a byte count with a binary unit.
func importSizeString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
