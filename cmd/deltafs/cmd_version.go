package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// release is the release version, set at build time:
//
//	go build -ldflags "-X main.release=v1.2.0" ./cmd/deltafs   (make build VERSION=v1.2.0)
//
// Without it the module version the Go toolchain stamps is used: from a
// git checkout, a pseudo-version of the commit ("v0.0.0-20260101120000-
// abcdef123456", "+dirty" with uncommitted changes), else "(devel)".
var release string

func init() {
	rootCmd.Version = versionLine()
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

// versionLine is the version, then what the build recorded: the VCS
// commit, its time and whether the tree had changes, and the Go toolchain
// and platform. One line:
//
//	v0.0.0-20260101120000-abcdef123456 (commit abcdef123456, 2026-01-01T12:00:00Z; go1.26.8 linux/amd64)
func versionLine() string {
	v := release
	var details []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		var rev, when string
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			c := "commit " + rev[:min(12, len(rev))]
			if when != "" {
				c += ", " + when
			}
			if modified {
				c += ", modified"
			}
			details = append(details, c)
		}
	}
	if v == "" {
		v = "(devel)"
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return v + " (" + strings.Join(details, "; ") + ")"
}
