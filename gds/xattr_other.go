//go:build !linux

package gds

// getxattr: deltafs mounts are Linux-only; elsewhere there is no attribute
// and SampleExtent uses the manifest.
func getxattr(path, name string) ([]byte, error) { return nil, errNoXattr }
