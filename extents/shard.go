package extents

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// Shard is a deltafs shard directory (MOUNT/version/N/shard/K) with its
// extent list loaded: where each of its samples lies in deltafs's disk
// cache. Opening it reads MOUNT/.../shard/K/_extents.tsv, which makes the
// mount write every sample of the shard to the disk cache that is not there
// yet. Not safe for concurrent use with Refresh.
type Shard struct {
	dir     string
	entries []Entry
	index   map[string]int // sample path -> entries index
}

// OpenShard reads the extent list of the shard directory dir (which
// materialises the shard in the mount's disk cache).
func OpenShard(dir string) (*Shard, error) {
	s := &Shard{dir: dir}
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh reads the extent list again, which writes samples evicted from the
// disk cache since the last read back into it (at the same places).
func (s *Shard) Refresh() error {
	entries, err := ReadListFile(filepath.Join(s.dir, ListName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("extents: %s has no %s: not a deltafs shard directory, or the mount has no disk cache (--cache-dir none): %w", s.dir, ListName, err)
		}
		return fmt.Errorf("extents: shard %s: %w", s.dir, err)
	}
	index := make(map[string]int, len(entries))
	for i, e := range entries {
		index[e.Sample] = i
	}
	s.entries, s.index = entries, index
	return nil
}

// Dir is the shard directory.
func (s *Shard) Dir() string { return s.dir }

// Samples lists the shard's samples (paths relative to Dir) in list
// order, which is the shard's order.
func (s *Shard) Samples() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.Sample
	}
	return out
}

// Entries returns a copy of the shard's extent list, in list order.
func (s *Shard) Entries() []Entry { return slices.Clone(s.entries) }

// Extents returns the extents of samples (paths relative to Dir; nil: every
// sample in list order). An unknown sample is an error naming it.
func (s *Shard) Extents(samples []string) ([]Extent, error) {
	if samples == nil {
		return Extents(s.entries), nil
	}
	out := make([]Extent, len(samples))
	for i, name := range samples {
		j, ok := s.index[name]
		if !ok {
			return nil, fmt.Errorf("extents: shard %s has no sample %q", s.dir, name)
		}
		out[i] = s.entries[j].Extent
	}
	return out, nil
}

// Extent returns the extent of sample (a path relative to Dir), and whether
// the shard has it.
func (s *Shard) Extent(sample string) (Extent, bool) {
	j, ok := s.index[sample]
	if !ok {
		return Extent{}, false
	}
	return s.entries[j].Extent, true
}
