package sample

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/deltafs/deltafs/snapshot"
)

// Version is one table version as samples. Its content never changes.
type Version struct {
	s    *Samples
	snap *snapshot.Snapshot

	commitJSON []byte
	schemaJSON []byte

	mu    sync.Mutex // guards the lazily built fields below
	spec  *resolved  // nil until resolved
	lay   *layout    // nil until built
	width *classRange
	// widthExact: width is the range of the live rows' classes (no
	// deletion vector hides rows from the statistics, no file failed).
	widthExact bool
	shards     []*Shard // built shards; nil entries not built yet
	// classWarned is set once the version's shards were found to hold
	// different class sets (warned once).
	classWarned bool
}

func (s *Samples) newVersion(snap *snapshot.Snapshot) *Version {
	v := &Version{s: s, snap: snap, shards: make([]*Shard, s.Shards())}
	v.commitJSON = commitJSON(snap)
	if snap.Schema != nil {
		b, _ := json.MarshalIndent(snap.Schema, "", "  ")
		v.schemaJSON = append(b, '\n')
	} else {
		v.schemaJSON = []byte("null\n")
	}
	return v
}

// Number is the version number.
func (v *Version) Number() int64 { return v.snap.Version }

// Snapshot is the version's snapshot.
func (v *Version) Snapshot() *snapshot.Snapshot { return v.snap }

// Time is the commit time (the mtime of everything under version/N).
func (v *Version) Time() time.Time { return v.snap.Timestamp }

// CommitJSON is the content of _commit.json.
func (v *Version) CommitJSON() []byte { return v.commitJSON }

// SchemaJSON is the content of _schema.json: the schema in Delta's format.
func (v *Version) SchemaJSON() []byte { return v.schemaJSON }

// Shards is the number of shards.
func (v *Version) Shards() int { return len(v.shards) }

func commitJSON(snap *snapshot.Snapshot) []byte {
	ci := snap.CommitInfo
	var rows any
	if n := snap.NumRows(); n >= 0 {
		rows = n
	}
	out := struct {
		Version     int64          `json:"version"`
		Timestamp   int64          `json:"timestamp"`
		Time        string         `json:"time"`
		Operation   string         `json:"operation"`
		Parameters  map[string]any `json:"operationParameters,omitempty"`
		Engine      string         `json:"engine"`
		Files       int            `json:"files"`
		Rows        any            `json:"rows"`
		ReaderVer   int            `json:"minReaderVersion"`
		Features    []string       `json:"readerFeatures,omitempty"`
		Partitioned []string       `json:"partitionColumns,omitempty"`
	}{
		Version: snap.Version, Timestamp: snap.Timestamp.UnixMilli(), Time: snap.Timestamp.UTC().Format(time.RFC3339Nano),
		Operation: ci.Operation, Parameters: ci.OperationParameters, Engine: ci.Engine(),
		Files: len(snap.Files), Rows: rows,
		ReaderVer: snap.Protocol.MinReaderVersion, Features: snap.Protocol.ReaderFeatures,
		Partitioned: snap.Metadata.PartitionColumns,
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// layout places a version's live rows: files in snapshot order (sorted by
// path), their live rows concatenated.
type layout struct {
	refs  []FileRef
	files []*snapshot.AddFile
	cum   []int64 // cum[i]: live rows before file i; cum[len] = total
}

func (l *layout) total() int64 { return l.cum[len(l.cum)-1] }

// shardRange is shard k's global sample range: the live rows split into S
// contiguous ranges of floor or ceil size.
func shardRange(total int64, k, shards int) (lo, hi int64) {
	return total * int64(k) / int64(shards), total * int64(k+1) / int64(shards)
}

// prepare resolves the spec and builds the layout, once.
func (v *Version) prepare(ctx context.Context) (*resolved, *layout, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.spec == nil {
		r, err := v.s.opts.Spec.resolve(v.snap)
		if err != nil {
			return nil, nil, fmt.Errorf("version %d: %w", v.snap.Version, err)
		}
		v.spec = r
	}
	if v.lay == nil {
		l := &layout{files: v.snap.Files, refs: make([]FileRef, len(v.snap.Files)), cum: make([]int64, len(v.snap.Files)+1)}
		for i, f := range v.snap.Files {
			key, err := v.s.opts.FileKey(v.snap, f.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("version %d: %s: %w", v.snap.Version, f.Path, err)
			}
			l.refs[i] = FileRef{Path: f.Path, Key: key, Size: f.Size}
			n := f.LiveRows()
			if n < 0 {
				// No row count in the log: the footer's, less the deletions.
				phys, err := v.s.opts.Fetcher.NumRows(ctx, l.refs[i])
				if err != nil {
					return nil, nil, &FileError{Version: v.snap.Version, Path: f.Path, Err: fmt.Errorf("row count: %w", err)}
				}
				n = phys
				if f.DeletionVector != nil {
					n -= f.DeletionVector.Cardinality
				}
			}
			l.cum[i+1] = l.cum[i] + n
		}
		v.lay = l
	}
	return v.spec, v.lay, nil
}

// Len is the number of samples (live rows) of the version.
func (v *Version) Len(ctx context.Context) (int64, error) {
	_, l, err := v.prepare(ctx)
	if err != nil {
		return 0, err
	}
	return l.total(), nil
}

// Shard returns shard k, building its index on first use: the sample
// metadata of the data files the shard overlaps, and only those.
func (v *Version) Shard(ctx context.Context, k int) (*Shard, error) {
	if k < 0 || k >= len(v.shards) {
		return nil, ErrNotExist
	}
	r, l, err := v.prepare(ctx)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	sh := v.shards[k]
	v.mu.Unlock()
	if sh != nil {
		return sh, nil
	}
	// Built outside the lock (it reads data files); a concurrent build of
	// the same shard is wasted work, not a wrong answer: first one wins.
	width, err := v.classWidth(ctx, r, l)
	if err != nil {
		return nil, err
	}
	sh, err = v.buildShard(ctx, r, l, width, k)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	first := v.shards[k] == nil
	if first {
		v.shards[k] = sh
	}
	sh = v.shards[k]
	var other *Shard
	var lo, hi, shLo, shHi float64
	var lacks bool
	if first && sh.r.class != nil && !v.classWarned {
		other = v.differentClasses(sh)
		if other == nil {
			lo, hi, shLo, shHi, lacks = v.lacksExtremes(sh)
		}
		v.classWarned = other != nil || lacks
	}
	v.mu.Unlock()
	if lacks {
		v.s.log.Warn("shard lacks classes the version has: a per-shard ImageFolder numbers the classes differently from other shards (class_to_idx), so labels differ between ranks; "+
			"rows are split into contiguous ranges, so write them in a shuffled order (deltafs import does for ImageFolder trees) or read a single shard",
			"version", v.snap.Version, "shard", k, "classes", len(sh.classes), "shard_class_range", fmt.Sprintf("%g..%g", shLo, shHi), "version_class_range", fmt.Sprintf("%g..%g", lo, hi))
	}
	if other != nil {
		only, missing := classDiff(sh.classes, other.classes)
		v.s.log.Warn("shards hold different classes: a per-shard ImageFolder numbers them differently (class_to_idx), so labels differ between ranks; "+
			"rows are split into contiguous ranges, so write them in a shuffled order (deltafs import does for ImageFolder trees) or read a single shard",
			"version", v.snap.Version, "shard", k, "classes", len(sh.classes), "other_shard", other.k, "other_classes", len(other.classes),
			"only_in_shard", only, "missing_from_shard", missing)
	}
	return sh, nil
}

// differentClasses returns a built shard of v whose class folders differ
// from sh's, or nil. It only compares shards already built (no I/O): with
// every shard in use, as under DDP on one machine, a difference is found
// as soon as the second differing shard is listed. Called with v.mu held.
func (v *Version) differentClasses(sh *Shard) *Shard {
	for _, o := range v.shards {
		if o == nil || o == sh {
			continue
		}
		if len(o.classes) != len(sh.classes) {
			return o
		}
		for i := range o.classes {
			if o.classes[i] != sh.classes[i] {
				return o
			}
		}
	}
	return nil
}

// classDiff is an example (up to 3) of the sorted class names only in a,
// and of those only in b.
func classDiff(a, b []string) (onlyA, onlyB []string) {
	in := func(s []string, x string) bool {
		i := sort.SearchStrings(s, x)
		return i < len(s) && s[i] == x
	}
	for _, x := range a {
		if !in(b, x) && len(onlyA) < 3 {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !in(a, x) && len(onlyB) < 3 {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// filesOf lists the file indexes overlapping [lo, hi).
func (l *layout) filesOf(lo, hi int64) (first, end int) {
	first = sort.Search(len(l.files), func(i int) bool { return l.cum[i+1] > lo })
	end = sort.Search(len(l.files), func(i int) bool { return l.cum[i] >= hi })
	if end < first {
		end = first
	}
	return first, end
}
