// Package buildinfo is the one definition of deltafs's version: what
// `deltafs version` prints and what `deltafs import` records in its commits
// (commitInfo.engineInfo "deltafs/<version>") and data files (created_by).
//
// A release build stamps it:
//
//	go build -ldflags "-X github.com/deltafs/deltafs/internal/buildinfo.release=v1.2.0" ./cmd/deltafs
//
// (make build VERSION=v1.2.0). Without it the module version the Go
// toolchain stamps is used: from a git checkout, a pseudo-version of the
// commit ("v0.0.0-20260101120000-abcdef123456", "+dirty" with uncommitted
// changes), else "(devel)".
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// release is set at build time with -ldflags -X (see the package doc).
var release string

// Version is the release, else the module version, else "(devel)".
func Version() string {
	if release != "" {
		return release
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Line is the version, then what the build recorded: the VCS commit, its
// time and whether the tree had changes, and the Go toolchain and
// platform. One line:
//
//	v0.0.0-20260101120000-abcdef123456 (commit abcdef123456, 2026-01-01T12:00:00Z; go1.26.8 linux/amd64)
func Line() string {
	var details []string
	if bi, ok := debug.ReadBuildInfo(); ok {
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
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return Version() + " (" + strings.Join(details, "; ") + ")"
}
