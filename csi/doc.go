// Package csi is deltafs's Container Storage Interface plugin
// (github.com/container-storage-interface/spec, v1): it makes a pod's
// volume a deltafs mount, so that a cluster schedules the mount with the
// pod, as it does mountpoint-s3's, gcsfuse's and JuiceFS's.
//
// # Services
//
//   - Identity: the plugin's name and version, its capabilities (the
//     controller service), Probe.
//   - Controller: CreateVolume and DeleteVolume only (capability
//     CREATE_DELETE_VOLUME), for StorageClass-based provisioning: a
//     volume is a view of a table, nothing is allocated, so CreateVolume
//     returns the StorageClass's parameters as the volume's context and
//     DeleteVolume forgets it. Volumes are remembered by name in the
//     plugin's state directory so that a name asked again with other
//     parameters is ALREADY_EXISTS, as the specification requires, also
//     after a restart. Every other controller call is UNIMPLEMENTED.
//   - Node: NodePublishVolume mounts the table the volume's context names
//     read-only at the target path; NodeUnpublishVolume unmounts it and
//     removes the target. No staging (a FUSE mount has nothing to share
//     between pods), no volume statistics, no expansion: UNIMPLEMENTED.
//
// # One process per mount
//
// Each publish runs `deltafs mount` as its own process (the plugin's own
// binary), in its own session, with its own cache directory under the
// state directory (--cache-size bounds it; it is removed at unpublish).
// A crash of one mount leaves the others and the plugin serving. The
// volume's attributes become the mount's flags, each one argument
// (--flag=value: no shell, no option injection); unknown attributes are
// refused. The volume's node-publish secrets (S3 keys, an Azure SAS or
// key, a Unity Catalog token, a Delta Sharing profile, a Google service
// account key) reach the process only through its environment or files
// of mode 0600 in its state directory, never its command line, and are
// never logged.
//
// # Restarts and failures
//
// Mounts survive a restart of the plugin: each publish is recorded in
// the state directory (volume, target, process id, the arguments'
// digest), and a restarted plugin adopts the mounts whose process still
// serves them, and forgets the records of those whose process is gone,
// so the next publish remakes them. When a mount's process dies, the
// plugin logs one line naming the volume and the target. The dead mount
// point is left mounted, and every access under it fails with EIO, never
// stale, partial or empty data: the plugin holds a clone of each mount's
// FUSE connection (conn.go), which keeps the connection from ending with
// its server, and answers every request on it with EIO once the server
// is gone (without it, Linux answers ENOTCONN, "Transport endpoint is not
// connected"). Detaching the mount point instead would show the pod the
// empty directory below. The next publish of that target detaches it and
// mounts again; the next unpublish detaches it. A server that dies while
// no plugin runs leaves its mount answering ENOTCONN until then.
//
// # Idempotency
//
// NodePublishVolume on a target already published with the same volume
// and arguments, whose process serves, succeeds without a new mount;
// with other arguments it is ALREADY_EXISTS. NodeUnpublishVolume of a
// target not mounted succeeds (and removes the directory if it is left).
package csi
