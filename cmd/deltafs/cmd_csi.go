package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/deltafs/deltafs/csi"
	"github.com/deltafs/deltafs/internal/buildinfo"
)

func init() { rootCmd.AddCommand(newCSICmd()) }

func newCSICmd() *cobra.Command {
	var endpoint, nodeID, stateDir string
	c := &cobra.Command{
		Use:   "csi --endpoint unix:///csi/csi.sock --node-id NODE",
		Short: "Serve the Kubernetes CSI plugin: each pod volume a deltafs mount (see deploy/kubernetes)",
		Long: `Serve the Container Storage Interface (CSI) Identity, Controller and Node
services at --endpoint, so that a Kubernetes pod's volume is a deltafs mount.

NodePublishVolume mounts the table the volume's attributes name (table, and the
sample flags: shards, classColumn, idColumn, dataColumn, image, where, memCache,
cacheSize, ...) read-only at the pod's target path, each mount its own
"deltafs mount" process with its own cache directory under --state-dir;
credentials come from the volume's node-publish secrets (awsAccessKeyID,
awsSecretAccessKey, awsSessionToken, azureStorageSASToken, ucToken,
sharingProfile, googleServiceAccountKey, ...) or the node's own identity,
never from a command line or a log. Mounts survive a restart of the plugin.

Runs until SIGINT or SIGTERM; the mounts it made keep serving.`,
		Args: cacheNoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if endpoint == "" || nodeID == "" {
				return usageError{errors.New("csi needs --endpoint and --node-id")}
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			d, err := csi.New(csi.Config{NodeID: nodeID, StateDir: stateDir, Binary: bin, Version: buildinfo.Line()})
			if err != nil {
				return err
			}
			return d.Serve(cmd.Context(), endpoint)
		},
	}
	c.Flags().StringVar(&endpoint, "endpoint", "", "where to serve gRPC: unix:///path/to/csi.sock")
	c.Flags().StringVar(&nodeID, "node-id", "", "this node's id (in Kubernetes: the node's name, spec.nodeName)")
	c.Flags().StringVar(&stateDir, "state-dir", "/var/lib/deltafs-csi", "mount records, per-volume caches and secret files (mode 0700)")
	return c
}
