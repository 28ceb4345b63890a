package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/internal/buildinfo"
)

// `deltafs man DIR` writes the man pages, one per command (deltafs.1,
// deltafs-mount.1, ...), generated from the command definitions by
// cobra's doc generator, so that they say what --help says. `make install`
// runs it into $(PREFIX)/share/man/man1. Hidden: a build step, not a
// command a user needs.
func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages of every command into DIR (make install does)",
		Hidden: true,
		Args:   positional("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			escapeMarkup(rootCmd)
			header := &doc.GenManHeader{Title: "DELTAFS", Section: "1", Source: "deltafs " + buildinfo.Version(), Manual: "deltafs manual"}
			if err := doc.GenManTree(rootCmd, header, args[0]); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			return nil
		},
	})
}

// escapeMarkup backslash-escapes the < and > of every command's text and
// flag usage: the generator reads them as Markdown, whose inline HTML
// would drop placeholders such as <id><ext> and at/<time>. (The
// process ends after writing the pages: the change is seen by nothing
// else.)
func escapeMarkup(c *cobra.Command) {
	esc := strings.NewReplacer("<", `\<`, ">", `\>`)
	c.Long = esc.Replace(c.Long)
	c.Flags().VisitAll(func(f *pflag.Flag) { f.Usage = esc.Replace(f.Usage) })
	c.PersistentFlags().VisitAll(func(f *pflag.Flag) { f.Usage = esc.Replace(f.Usage) })
	for _, sub := range c.Commands() {
		escapeMarkup(sub)
	}
}
