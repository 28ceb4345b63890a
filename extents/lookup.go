package extents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SampleExtent returns where the bytes of the sample file at path (inside a
// deltafs mount) lie in the disk cache, materialising it: from its extended
// attribute XattrName when the mount serves it (--xattrs), else from the
// extent list of its shard directory (its parent, or its grandparent for a
// sample in a class folder), which materialises the whole shard.
func SampleExtent(path string) (Extent, error) {
	e, err := xattrExtent(path)
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, errNoXattr) {
		return Extent{}, fmt.Errorf("extents: %s: %w", path, err)
	}
	rel := filepath.Base(path)
	for dir := filepath.Dir(path); ; {
		if _, serr := os.Stat(filepath.Join(dir, ListName)); serr == nil {
			s, err := OpenShard(dir)
			if err != nil {
				return Extent{}, err
			}
			x, err := s.Extents([]string{rel})
			if err != nil {
				return Extent{}, err
			}
			return x[0], nil
		}
		if strings.Contains(rel, "/") || dir == filepath.Dir(dir) {
			return Extent{}, fmt.Errorf("extents: %s: no extent: the mount serves no %s attribute (mount with --xattrs) and no %s was found in its shard directory", path, XattrName, ListName)
		}
		rel = filepath.Base(dir) + "/" + rel
		dir = filepath.Dir(dir)
	}
}

// errNoXattr: the file has no extent attribute (the mount has no --xattrs,
// or the filesystem has no xattrs).
var errNoXattr = errors.New("no extent attribute")

func xattrExtent(path string) (Extent, error) {
	v, err := getxattr(path, XattrName)
	if err != nil {
		return Extent{}, err
	}
	var e Extent
	if err := e.UnmarshalText(v); err != nil {
		return Extent{}, fmt.Errorf("attribute %s: %w", XattrName, err)
	}
	return e, nil
}
