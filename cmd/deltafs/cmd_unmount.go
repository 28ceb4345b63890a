package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/fusefs"
)

func init() { rootCmd.AddCommand(newUnmountCmd()) }

func newUnmountCmd() *cobra.Command {
	var lazy bool
	c := &cobra.Command{
		Use:   "unmount MOUNTPOINT [--lazy]",
		Short: "Unmount a deltafs mount (also a stale one whose server died)",
		Long: `Unmount MOUNTPOINT with fusermount3 -u; when that fails and deltafs runs as root,
with umount(2). Only a deltafs mount is unmounted (filesystem type fuse.deltafs in
/proc/self/mountinfo): anything else at MOUNTPOINT, or nothing, is refused with exit 1.

--lazy detaches the mount now and lets it go when the last open file closes
(fusermount3 -u -z, MNT_DETACH), which also clears a stale mount ("transport
endpoint is not connected") that is still in use.

Exit status: 0 when MOUNTPOINT is no longer mounted, 1 on any error, 2 on bad usage.`,
		Args: positional("MOUNTPOINT"),
		RunE: func(cmd *cobra.Command, args []string) error { return runUnmount(args[0], lazy) },
	}
	c.Flags().BoolVar(&lazy, "lazy", false, "detach now, finish when the mount is no longer busy")
	return c
}

func runUnmount(dir string, lazy bool) error {
	// Refuse anything but a deltafs mount: as root, fusefs.Unmount's umount(2) would
	// unmount whatever is there. Found in mountinfo, not by a stat, so
	// that a stale mount (ENOTCONN) still qualifies.
	m, ok, err := fusefs.FindMount(dir)
	switch {
	case err != nil:
		return fmt.Errorf("unmount %s: %w", dir, err)
	case !ok:
		return fmt.Errorf("unmount %s: not a mount point", dir)
	case m.FSType != fusefs.FSType:
		return fmt.Errorf("unmount %s: not a deltafs mount (%s from %s); refusing to unmount it", dir, m.FSType, m.Source)
	}
	err = fusefs.Unmount(dir, lazy)
	if errors.Is(err, fusefs.ErrBusy) {
		return fmt.Errorf("%w; close them, or detach it now with --lazy", err)
	}
	return err
}
