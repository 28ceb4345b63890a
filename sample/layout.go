package sample

import (
	"context"
	"fmt"
	"sort"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/snapshot"
)

// Layouts: how a version's live rows are split into shards.
const (
	// LayoutContiguous gives shard k the k-th contiguous range of the
	// version's rows in append order: each shard reads about 1/S of the
	// data files (locality first). The default without a class column.
	LayoutContiguous = "contiguous"
	// LayoutBalanced deals each class's rows across the shards, so that
	// every shard holds every class with at least S samples and rows
	// keep their shard when rows are appended. The default with a class
	// column.
	LayoutBalanced = "balanced"
)

// MaxSamples bounds the live rows of one version (inode numbers give each
// sample of a version 32 bits). A log claiming more is refused, never
// allocated for.
const MaxSamples = 1<<32 - 1

// maxFileRows bounds the rows one data file may claim: beyond it the claim
// is taken for damage, not a size to plan for.
const maxFileRows = 1 << 31

// layout is a version's data files in append order — by the add action's
// modificationTime, then path — so that files appended by later commits
// come after the ones already there, with the live rows each file holds
// by the log (claim) and their running sum (cum). Claims are what the log
// (or, without statistics, the Parquet footer) says; the index of a file
// checks its claim against the rows it actually decodes.
type layout struct {
	refs  []page.FileRef
	files []*snapshot.AddFile
	claim []int64 // live rows by the log; -1: unknown or implausible
	cum   []int64 // cum[i]: claimed live rows before file i (unknown as 0)
}

func (l *layout) total() int64 { return l.cum[len(l.cum)-1] }

// newLayout orders snap's files and takes their claimed live rows from the
// log; without statistics it reads the footer (numRows) when footers is
// set, else leaves the claim unknown (-1) for the index to settle.
//
// With a filter, the files it prunes or skips are left out (never
// opened), and a file whose rows it filters has no claim: with footers
// set (a contiguous layout, which places shards by the claims) those
// files are indexed here, so that their claims are the rows kept.
func (v *Version) newLayout(ctx context.Context, r *resolved, footers bool) (*layout, error) {
	var files []*snapshot.AddFile
	var filtered []int // files whose rows the filter selects
	for _, f := range v.snap.Files {
		switch v.decision(f) {
		case filter.Pruned, filter.Skipped:
			continue
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].ModificationTime != files[j].ModificationTime {
			return files[i].ModificationTime < files[j].ModificationTime
		}
		return files[i].Path < files[j].Path
	})
	l := &layout{files: files, refs: make([]page.FileRef, len(files)), claim: make([]int64, len(files)), cum: make([]int64, len(files)+1)}
	for i, f := range files {
		key, err := v.s.opts.FileKey(v.snap, f.Path)
		if err != nil {
			return nil, v.fileErr(f.Path, err)
		}
		l.refs[i] = page.FileRef{Path: f.Path, Key: key, Size: f.Size}
		if r.filter != nil && v.decision(f) == filter.Some {
			l.claim[i] = -1
			filtered = append(filtered, i)
			continue
		}
		n := f.LiveRows()
		if n < 0 || n > maxFileRows || (f.DeletionVector != nil && f.DeletionVector.Cardinality < 0) {
			n = -1
		}
		if n < 0 && footers {
			phys, err := v.s.opts.Fetcher.NumRows(ctx, l.refs[i])
			if err == nil && f.DeletionVector != nil {
				phys -= f.DeletionVector.Cardinality
			}
			if err == nil && (phys < 0 || phys > maxFileRows) {
				err = fmt.Errorf("the footer and the deletion vector give %d live rows", phys)
			}
			switch {
			case err != nil && v.s.opts.Spec.SkipUnreadable && ctx.Err() == nil:
				// Its rows are left out.
				phys = 0
				v.s.warnOnce("skip:"+fmt.Sprint(v.snap.Version)+"\x00"+f.Path,
					"--skip-unreadable: leaving out the samples of a data file that cannot be read; shards of this version are smaller",
					"table", v.s.location(), "version", v.snap.Version, "file", f.Path, "err", err)
			case err != nil:
				return nil, v.fileErr(f.Path, fmt.Errorf("row count: %w", err))
			}
			n = phys
		}
		l.claim[i] = n
	}
	if footers && len(filtered) > 0 {
		fss, err := v.indexList(ctx, r, l, filtered)
		if err != nil {
			return nil, err
		}
		for j, i := range filtered {
			if fss[j] != nil {
				l.claim[i] = int64(fss[j].n)
			} else {
				l.claim[i] = 0 // left out (--skip-unreadable)
			}
		}
	}
	for i, n := range l.claim {
		l.cum[i+1] = l.cum[i] + max(n, 0)
		if l.cum[i+1] > MaxSamples {
			return nil, fmt.Errorf("%s version %d: more than %d live rows: deltafs serves at most that many samples per version", v.s.location(), v.snap.Version, int64(MaxSamples))
		}
	}
	return l, nil
}

// filesOf lists the file indexes whose claimed rows overlap [lo, hi).
func (l *layout) filesOf(lo, hi int64) (first, end int) {
	first = sort.Search(len(l.files), func(i int) bool { return l.cum[i+1] > lo })
	end = sort.Search(len(l.files), func(i int) bool { return l.cum[i] >= hi })
	if end < first {
		end = first
	}
	return first, end
}

// owner is the shard of a contiguous layout that checks file i when it
// claims no rows: the last shard whose range starts at or before it.
func (l *layout) owner(i, shards int) int {
	total := l.total()
	return sort.Search(shards, func(k int) bool {
		lo, _ := shardRange(total, k, shards)
		return lo > l.cum[i]
	}) - 1
}

// shardRange is shard k's range of a contiguous layout: the rows split
// into S ranges of floor or ceil size.
func shardRange(total int64, k, shards int) (lo, hi int64) {
	return total * int64(k) / int64(shards), total * int64(k+1) / int64(shards)
}

// deal is a balanced layout: which rows of which file each shard holds.
//
// Every live row of the version has a class (one class for all rows
// without a class column). Classes are ordered by folder name; within a
// class, rows are in append order. Of class c's n_c rows, the first
// S·⌊n_c/S⌋ are dealt round-robin: the j-th to shard j mod S. The rest
// (fewer than S per class) are concatenated over the classes in order and
// dealt round-robin again from shard 0. So:
//
//   - shard sizes differ by at most one (every shard gets ⌊n_c/S⌋ rows of
//     each class, and the remainders are dealt evenly);
//   - every class with at least S rows is in every shard;
//   - rows appended by a later commit (later in append order) leave the
//     first S·⌊n_c/S⌋ rows of each class where they were: only the
//     remainder rows, fewer than S per class, may move.
//
// Within a shard, samples are in append order (file, then row), so a
// shard reads its files front to back.
type deal struct {
	segs   [][]segment // per shard
	starts []int64     // global number of each shard's first sample
	rare   []rareClass // classes with fewer rows than shards
}

// rareClass is a class some shards lack.
type rareClass struct {
	name string
	n    int
}

// dealRows builds the balanced layout of the version's indexed files.
// fss[i] is file i's index (nil: the file is left out, see
// Spec.SkipUnreadable); names[i][c] is the folder name of file i's local
// class c (nil without a class column).
func dealRows(l *layout, fss []*fileSamples, names [][]string, shards int) *deal {
	// Global class ids, by folder name.
	byName := map[string]int{}
	var classNames []string
	gmap := make([][]int32, len(fss))
	for i, fs := range fss {
		if fs == nil {
			continue
		}
		if names == nil {
			gmap[i] = nil
			continue
		}
		gmap[i] = make([]int32, len(names[i]))
		for c, name := range names[i] {
			id, ok := byName[name]
			if !ok {
				id = len(classNames)
				byName[name] = id
				classNames = append(classNames, name)
			}
			gmap[i][c] = int32(id)
		}
	}
	if names == nil {
		classNames = []string{""}
	}
	order := make([]int, len(classNames))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return classNames[order[a]] < classNames[order[b]] })
	count := make([]int64, len(classNames))
	classOf := func(i, j int) int {
		if gmap[i] == nil {
			return 0
		}
		return int(gmap[i][fss[i].class[j]])
	}
	for i, fs := range fss {
		if fs == nil {
			continue
		}
		for j := range fs.n {
			count[classOf(i, j)]++
		}
	}
	S := int64(shards)
	full := make([]int64, len(classNames))
	remStart := make([]int64, len(classNames))
	var rem int64
	d := &deal{segs: make([][]segment, shards), starts: make([]int64, shards)}
	for _, c := range order {
		full[c] = S * (count[c] / S)
		remStart[c] = rem
		rem += count[c] % S
		if count[c] < S && count[c] > 0 && shards > 1 {
			d.rare = append(d.rare, rareClass{name: classNames[c], n: int(count[c])})
		}
	}
	seen := make([]int64, len(classNames))
	sizes := make([]int, shards)
	for i, fs := range fss {
		if fs == nil {
			continue
		}
		var cur []int // index in d.segs[k] of file i's segment, -1: none yet
		cur = make([]int, shards)
		for k := range cur {
			cur[k] = -1
		}
		for j := range fs.n {
			c := classOf(i, j)
			s := seen[c]
			seen[c]++
			var k int64
			if s < full[c] {
				k = s % S
			} else {
				k = (remStart[c] + s - full[c]) % S
			}
			if cur[k] < 0 {
				d.segs[k] = append(d.segs[k], segment{pos: sizes[k], file: i, add: l.files[i], ref: fs.ref, fs: fs})
				cur[k] = len(d.segs[k]) - 1
			}
			sg := &d.segs[k][cur[k]]
			sg.ords = append(sg.ords, int32(j))
			sg.n++
			sizes[k]++
		}
	}
	for k := range d.segs {
		for j := range d.segs[k] {
			d.segs[k][j].boundReadAhead()
		}
	}
	for k := 1; k < shards; k++ {
		d.starts[k] = d.starts[k-1] + int64(sizes[k-1])
	}
	return d
}
