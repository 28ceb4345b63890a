package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/internal/buildinfo"
)

// The version (internal/buildinfo: one definition, stamped by
// `make build VERSION=v1.2.0`) is what `deltafs version` prints and what
// `deltafs import` records in its commits.
func init() {
	rootCmd.Version = buildinfo.Line()
	// `deltafs --version` (cobra's flag on the root command only: the
	// --version of cat and warm is a table version) and `deltafs version`
	// print the same line.
	rootCmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	rootCmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print deltafs's version, commit and Go version (also: deltafs --version)",
		Args:  cacheNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "deltafs %s\n", rootCmd.Version)
			return err
		},
	})
}
