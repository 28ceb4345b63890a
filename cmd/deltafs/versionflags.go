package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/snapshot"
)

// versionFlags are --version and --at, which pick the table version a
// command works on.
type versionFlags struct {
	version int64
	at      string
	when    time.Time // --at, parsed by check; zero without it
}

// addFlags adds --version and --at to a command that does verb to the
// version ("print", "warm"). With latest, a command given neither works on
// the latest version; without, it must be given one (check).
func (o *versionFlags) addFlags(f *pflag.FlagSet, verb string, latest bool) {
	help := "table version to " + verb
	if latest {
		help += " (default: the latest)"
	}
	o.version = -1
	f.Var(unsetInt[int64]{&o.version}, "version", help)
	// `TIME` in back quotes is the placeholder the help shows (--at TIME).
	f.StringVar(&o.at, "at", "", verb+" the version current at `TIME` (Unix milliseconds, RFC 3339, or a time as deltafs log prints it, UTC)")
}

// unsetInt is an integer flag whose value before it is given, -1, means
// what its usage text says ("default: all", "default: the latest"): its
// help line shows no "(default -1)" after that.
type unsetInt[T int | int64] struct{ p *T }

func (v unsetInt[T]) Type() string { return "int" }

func (v unsetInt[T]) String() string {
	if v.p == nil || *v.p < 0 {
		return ""
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v unsetInt[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || int64(T(n)) != n {
		return errors.New("want a whole number")
	}
	*v.p = T(n)
	return nil
}

// check validates the flags of cmd and parses --at; errors are
// usageErrors. required: exactly one of --version and --at is needed.
func (o *versionFlags) check(cmd *cobra.Command, required bool) error {
	flags := cmd.Flags()
	hasVersion, hasAt := flags.Changed("version"), flags.Changed("at")
	switch {
	case required && hasVersion == hasAt:
		return usageError{fmt.Errorf("%s: give exactly one of --version and --at", cmd.Name())}
	case hasVersion && hasAt:
		return usageError{errors.New("--version and --at exclude each other")}
	case hasVersion && o.version < 0:
		return usageError{fmt.Errorf("--version %d: want a version number >= 0", o.version)}
	}
	if hasAt {
		t, err := snapshot.ParseTime(o.at)
		if err != nil {
			return usageError{fmt.Errorf("--at: %w", err)}
		}
		o.when = t
	}
	return nil
}

// resolve returns the version the flags pick in tbl: --version, the
// version current at --at, or -1 (the latest) for neither.
func (o *versionFlags) resolve(ctx context.Context, tbl *snapshot.Log) (int64, error) {
	if o.when.IsZero() {
		return o.version, nil
	}
	return tbl.VersionAt(ctx, o.when)
}
