package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/importer"
	"github.com/deltafs/deltafs/storage"
	_ "github.com/deltafs/deltafs/storage/s3store" // TABLE may be s3://bucket/prefix
	"github.com/deltafs/deltafs/writer"
)

func init() { rootCmd.AddCommand(newImportCmd()) }

// importOptions are the flags of deltafs import.
type importOptions struct {
	mode        string
	rowsPerFile int
}

func newImportCmd() *cobra.Command {
	var o importOptions
	c := &cobra.Command{
		Use:   "import SRC TABLE [--mode append|overwrite] [--rows-per-file N]",
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
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	source, err := importer.Open(src)
	if err != nil {
		return err
	}
	defer source.Close()
	st, err := storage.Open(ctx, table, global.storage)
	if err != nil {
		return err
	}
	res, err := importer.Import(ctx, st, source, writer.Options{Mode: mode, RowsPerFile: o.rowsPerFile})
	if err != nil {
		return fmt.Errorf("import %s: %w", src, err) // err names the table
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
