//go:build !linux

package extents

// getxattr: deltafs mounts are Linux-only; elsewhere there is no attribute
// and SampleExtent uses the extent list.
func getxattr(path, name string) ([]byte, error) { return nil, errNoXattr }
