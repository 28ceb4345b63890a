// Package e2e holds end-to-end tests that run the real deltafs binary: they
// write real Delta tables, mount them on real FUSE mounts, and read them with
// real tools (torchvision's ImageFolder from Debian's python3-torchvision,
// through a DataLoader with worker processes).
package e2e
