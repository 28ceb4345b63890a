package sample

import (
	"sync"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/snapshot"
)

// A filter (Spec.Where) selects samples in three steps, each cheaper than
// the next: partition pruning and file skipping decide from the log alone
// which data files can hold matching rows (filter.Decide), so the others
// are left out of the layout and never opened; then a file's index keeps
// only its live rows that match (buildFile reads the filter's columns
// first, and the data column only at the rows kept). The layout, the
// shards, class folders, _samples.tsv, the tar view and the extents are
// then computed over the rows kept, as they are over the live rows
// without a filter.

// FilterCounts say what a filter made of a version's data files.
type FilterCounts struct {
	Pruned  int `json:"filesPruned"`  // left out by their partition values
	Skipped int `json:"filesSkipped"` // left out by their statistics
	Read    int `json:"filesRead"`    // read: every row matches (All) or rows are filtered
	All     int `json:"filesAllRowsMatch"`
}

func (c *FilterCounts) add(d filter.Decision) {
	switch d {
	case filter.Pruned:
		c.Pruned++
	case filter.Skipped:
		c.Skipped++
	case filter.All:
		c.All++
		c.Read++
	default:
		c.Read++
	}
}

// whereState is a version's filter: Spec.Where bound to the version's
// schema, once (the spec's resolution, its decisions and the --image check
// all use this binding), and its decision on each data file with their
// counts, once, on first use (from the log alone). They are the one
// binding and the one count of the version: _commit.json, .deltafs/stats
// and the mount's start line (Describe) say the same counts.
type whereState struct {
	bindOnce sync.Once
	f        *filter.Filter // nil: no filter, or err
	err      error

	decideOnce sync.Once
	dec        map[*snapshot.AddFile]filter.Decision
	counts     FilterCounts
}

// bound is the version's filter bound to its schema (nil without one, or
// with err), bound once (no I/O).
func (v *Version) bound() (*filter.Filter, error) {
	w := &v.whereSt
	w.bindOnce.Do(func() { w.f, w.err = v.s.opts.Spec.bindWhere(v.snap) })
	return w.f, w.err
}

// where is the version's filter state with every data file decided (no
// I/O).
func (v *Version) where() *whereState {
	w := &v.whereSt
	if f, _ := v.bound(); f == nil {
		return w
	}
	w.decideOnce.Do(func() {
		w.dec = make(map[*snapshot.AddFile]filter.Decision, len(v.snap.Files))
		for _, a := range v.snap.Files {
			d := w.f.Decide(v.snap, a)
			w.dec[a] = d
			w.counts.add(d)
		}
	})
	return w
}

// decision is what the filter makes of data file a of the version:
// filter.All without a filter.
func (v *Version) decision(a *snapshot.AddFile) filter.Decision {
	w := v.where()
	if w.f == nil {
		return filter.All
	}
	if d, ok := w.dec[a]; ok {
		return d
	}
	return filter.Some
}

// FilterCounts are what the version's filter made of its data files, and
// whether it has one that binds to its schema.
func (v *Version) FilterCounts() (FilterCounts, bool) {
	w := v.where()
	return w.counts, w.f != nil
}

// whereJSON is the "filter" member of _commit.json (nil without a filter).
func (v *Version) whereJSON() any {
	if v.s.opts.Spec.Where == nil {
		return nil
	}
	w := v.where()
	out := struct {
		Where string `json:"where"`
		Error string `json:"error,omitempty"`
		*FilterCounts
	}{Where: filter.Brief(v.s.opts.Spec.Where.String())}
	if w.err != nil {
		out.Error = w.err.Error()
	} else {
		out.FilterCounts = &w.counts
	}
	return out
}
