package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// Version is one table version as samples. Its content never changes.
type Version struct {
	s    *Samples
	snap *snapshot.Snapshot

	commitOnce sync.Once
	commitJSON []byte // built on first use (a filter decides every file for it)
	schemaJSON []byte

	whereSt whereState // the filter's decisions (where.go)

	mu     sync.Mutex // guards the lazily built fields below
	spec   *resolved  // nil until resolved
	lay    *layout    // nil until built
	width  *classRange
	shards []*Shard // built shards; nil entries not built yet
	// widthExact: width is the range of the live rows' classes (no
	// deletion vector hides rows from the statistics, no file failed).
	widthExact bool
	// classWarned is set once the version's shards were found to hold
	// different class sets (contiguous layout; warned once).
	classWarned bool

	dealMu sync.Mutex // serialises building dealt
	dealt  *deal      // balanced layout, built with the first shard; guarded by dealMu
}

func (s *Samples) newVersion(snap *snapshot.Snapshot) *Version {
	v := &Version{s: s, snap: snap, shards: make([]*Shard, s.Shards())}
	v.schemaJSON = schemaJSON(snap.Schema)
	return v
}

// Bounds of _schema.json's indentation: two spaces per level make a line
// at depth d cost 2d bytes, so a schema nested thousands of levels deep
// would take hundreds of megabytes indented.
const (
	// schemaIndentDepth is the deepest JSON nesting that is indented.
	schemaIndentDepth = 32
	// schemaIndentGrowth bounds the indented form against the compact one.
	schemaIndentGrowth = 8
)

// schemaJSON is the content of _schema.json: the schema in Delta's
// format, indented by two spaces a level, unless it nests deeper than
// schemaIndentDepth or its indented form is more than schemaIndentGrowth
// times the compact one: then compact, on one line.
func schemaJSON(schema *snapshot.StructType) []byte {
	if schema == nil {
		return []byte("null\n")
	}
	b, _ := json.Marshal(schema)
	if schema.JSONDepth() <= schemaIndentDepth {
		var ind bytes.Buffer
		if json.Indent(&ind, b, "", "  ") == nil && ind.Len() <= schemaIndentGrowth*len(b) {
			b = ind.Bytes()
		}
	}
	return append(b, '\n')
}

// Number is the version number.
func (v *Version) Number() int64 { return v.snap.Version }

// Snapshot is the version's snapshot.
func (v *Version) Snapshot() *snapshot.Snapshot { return v.snap }

// Time is the commit time (the mtime of everything under version/N).
func (v *Version) Time() time.Time { return v.snap.Timestamp }

// CommitJSON is the content of _commit.json.
func (v *Version) CommitJSON() []byte {
	v.commitOnce.Do(func() { v.commitJSON = commitJSON(v.snap, v.whereJSON()) })
	return v.commitJSON
}

// SchemaJSON is the content of _schema.json: the schema in Delta's format.
func (v *Version) SchemaJSON() []byte { return v.schemaJSON }

// Shards is the number of shards.
func (v *Version) Shards() int { return len(v.shards) }

// commitJSON is _commit.json; where, when set, is the filter's member.
func commitJSON(snap *snapshot.Snapshot, where any) []byte {
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
		Filter      any            `json:"filter,omitempty"`
	}{
		Version: snap.Version, Timestamp: snap.Timestamp.UnixMilli(), Time: snap.Timestamp.UTC().Format(time.RFC3339Nano),
		Operation: ci.Operation, Parameters: ci.OperationParameters, Engine: ci.Engine(),
		Files: len(snap.Files), Rows: rows,
		ReaderVer: snap.Protocol.MinReaderVersion, Features: snap.Protocol.ReaderFeatures,
		Partitioned: snap.Metadata.PartitionColumns, Filter: where,
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// fileErr names a data file of the version in an error, once: a cause
// from the log side (a deletion vector) names its own file and is
// returned as it is, and the scan layer's naming of the file is dropped.
func (v *Version) fileErr(path string, err error) error {
	var fe *FileError
	var se *snapshot.Error
	var sfe *scan.FileError
	switch {
	case errors.As(err, &fe), errors.As(err, &se):
		return err
	case errors.As(err, &sfe):
		err = sfe.Err
	}
	return &FileError{Table: v.s.location(), Version: v.snap.Version, Path: path, Err: err}
}

// Servable says whether the mount's spec can serve the version: the
// columns it names (id, data, class, the mode's) are in the version's
// schema and its filter binds to it. It reads no data file. A commit that
// drops such a column makes its version fail here, so latest does not
// move to it (fs).
func (v *Version) Servable() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.resolveLocked()
}

// resolveLocked resolves the spec once; v.mu is held.
func (v *Version) resolveLocked() error {
	if v.spec != nil {
		return nil
	}
	r, err := v.s.opts.Spec.resolve(v.snap, v.bound)
	if err != nil {
		return &SpecError{Table: v.s.location(), Version: v.snap.Version, Err: err}
	}
	v.spec = r
	return nil
}

// prepare resolves the spec and builds the layout, once.
func (v *Version) prepare(ctx context.Context) (*resolved, *layout, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.resolveLocked(); err != nil {
		return nil, nil, err
	}
	if v.lay == nil {
		// A balanced layout indexes every file, which settles unknown
		// claims; a contiguous one needs them to place its shards.
		l, err := v.newLayout(ctx, v.spec, v.spec.layout == LayoutContiguous)
		if err != nil {
			return nil, nil, err
		}
		v.lay = l
	}
	return v.spec, v.lay, nil
}

// Len is the number of samples (live rows) of the version as the log
// claims them.
func (v *Version) Len(ctx context.Context) (int64, error) {
	_, l, err := v.prepare(ctx)
	if err != nil {
		return 0, err
	}
	return l.total(), nil
}

// Shard returns shard k, building its index on first use. With a
// contiguous layout that reads the data files the shard overlaps, and only
// those; a balanced layout indexes every data file of the version once,
// for all its shards.
//
// A data file the shard needs that cannot be indexed (missing, truncated,
// corrupt, a deletion vector that does not load, a row count that
// disagrees with the log) fails the whole shard with a FileError naming
// it — never a shard with fewer samples — unless Spec.SkipUnreadable,
// which leaves the file's rows out with a warning. Failures are not
// remembered: the next call tries again.
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
	start := time.Now()
	defer func() { v.s.ctr.IndexNanos.Add(int64(time.Since(start))) }()
	if r.layout == LayoutBalanced {
		sh, err = v.dealtShard(ctx, r, l, k)
	} else {
		sh, err = v.contiguousShard(ctx, r, l, k)
	}
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	first := v.shards[k] == nil
	if first {
		v.shards[k] = sh
	}
	sh = v.shards[k]
	v.mu.Unlock()
	if first && v.s.opts.OnIndexed != nil {
		v.s.opts.OnIndexed(sh.Len())
	}
	if first && r.class != nil && r.layout == LayoutContiguous {
		v.warnClassSets(sh)
	}
	return sh, nil
}

// indexFiles indexes files [first, end) of the layout, a few at a time.
// A file that fails fails the call, unless SkipUnreadable: then its entry
// is nil and a warning names it (once per version and file).
func (v *Version) indexFiles(ctx context.Context, r *resolved, l *layout, first, end int) ([]*fileSamples, error) {
	idx := make([]int, end-first)
	for i := range idx {
		idx[i] = first + i
	}
	return v.indexList(ctx, r, l, idx)
}

// indexList is indexFiles of the layout's files idx (ascending).
func (v *Version) indexList(ctx context.Context, r *resolved, l *layout, idx []int) ([]*fileSamples, error) {
	out := make([]*fileSamples, len(idx))
	errs := make([]error, len(idx))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(v.s.opts.Parallel)
	for j, i := range idx {
		g.Go(func() error {
			fs, err := v.fileSamples(gctx, r, l, i)
			if err != nil {
				errs[j] = err
				if !v.s.opts.Spec.SkipUnreadable || ctx.Err() != nil {
					return err
				}
				return nil
			}
			out[j] = fs
			return nil
		})
	}
	gerr := g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if gerr != nil {
		// The first failing file in layout order, not whichever failed
		// first, so that every node names the same one.
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return nil, e
			}
		}
		return nil, gerr
	}
	for i, e := range errs {
		if e != nil {
			v.s.warnOnce("skip:"+fmt.Sprint(v.snap.Version)+"\x00"+l.files[idx[i]].Path,
				"--skip-unreadable: leaving out the samples of a data file that cannot be read; shards of this version are smaller",
				"table", v.s.location(), "version", v.snap.Version, "file", l.files[idx[i]].Path, "err", e)
		}
	}
	return out, nil
}

// contiguousShard builds shard k of a contiguous layout: the data files
// its range overlaps, their rows in the range.
func (v *Version) contiguousShard(ctx context.Context, r *resolved, l *layout, k int) (*Shard, error) {
	width, err := v.classWidth(ctx, r, l)
	if err != nil {
		return nil, err
	}
	lo, hi := shardRange(l.total(), k, len(v.shards))
	first, end := l.filesOf(lo, hi)
	fss, err := v.indexFiles(ctx, r, l, first, end)
	if err != nil {
		return nil, err
	}
	// Files claiming no live rows lie in no range: the shard where they
	// would start checks that they are empty indeed, so that a wrong
	// claim of 0 cannot hide rows.
	var empty []int
	for i, c := range l.claim {
		if c == 0 && (i < first || i >= end) && l.owner(i, len(v.shards)) == k {
			empty = append(empty, i)
		}
	}
	for _, i := range empty {
		if _, err := v.indexFiles(ctx, r, l, i, i+1); err != nil {
			return nil, err
		}
	}
	sh := &Shard{v: v, r: r, k: k, start: lo}
	pos := 0
	for i := first; i < end; i++ {
		fs := fss[i-first]
		from, to := max(lo, l.cum[i]), min(hi, l.cum[i+1])
		if fs == nil || to <= from {
			continue
		}
		sg := segment{pos: pos, local: int(from - l.cum[i]), n: int(to - from), file: i, add: l.files[i], ref: fs.ref, fs: fs}
		sg.boundReadAhead()
		sh.segs = append(sh.segs, sg)
		pos += int(to - from)
	}
	if err := sh.index(width); err != nil {
		return nil, err
	}
	return sh, nil
}

// Locate finds the sample numbered g in the version (Shard.Global): its
// shard, built if needed, and position. ErrNotExist when no sample has
// that number.
func (v *Version) Locate(ctx context.Context, g int64) (*Shard, int, error) {
	r, l, err := v.prepare(ctx)
	if err != nil {
		return nil, 0, err
	}
	S := len(v.shards)
	var k int
	if r.layout == LayoutBalanced {
		d, _, err := v.deal(ctx, r, l)
		if err != nil {
			return nil, 0, err
		}
		k = sort.Search(S, func(k int) bool { return k+1 == S || d.starts[k+1] > g }) // last shard starting at or before g
	} else {
		total := l.total()
		k = sort.Search(S, func(k int) bool { _, hi := shardRange(total, k, S); return hi > g })
	}
	if g < 0 || k >= S {
		return nil, 0, ErrNotExist
	}
	sh, err := v.Shard(ctx, k)
	if err != nil {
		return nil, 0, err
	}
	pos := sh.Local(g)
	if pos < 0 || pos >= sh.Len() {
		return nil, 0, ErrNotExist
	}
	return sh, pos, nil
}

// dealtShard builds shard k of a balanced layout, dealing the version's
// rows (every data file indexed) on first use.
func (v *Version) dealtShard(ctx context.Context, r *resolved, l *layout, k int) (*Shard, error) {
	d, width, err := v.deal(ctx, r, l)
	if err != nil {
		return nil, err
	}
	sh := &Shard{v: v, r: r, k: k, start: d.starts[k], segs: d.segs[k]}
	if err := sh.index(width); err != nil {
		return nil, err
	}
	return sh, nil
}

// deal indexes every data file and deals their rows (see deal), once per
// version; a failure is not kept.
func (v *Version) deal(ctx context.Context, r *resolved, l *layout) (*deal, int, error) {
	v.dealMu.Lock()
	defer v.dealMu.Unlock()
	if v.dealt != nil {
		return v.dealt, v.exactWidth(), nil
	}
	fss, err := v.indexFiles(ctx, r, l, 0, len(l.files))
	if err != nil {
		return nil, 0, err
	}
	var names [][]string
	width := 0
	if r.class != nil {
		// The padding width from every live row's class: exact.
		var cr classRange
		for _, fs := range fss {
			if fs == nil || !r.class.numeric {
				continue
			}
			for _, c := range fs.classes {
				if x, ok := numericString(c); ok {
					cr.add(x)
				}
			}
		}
		v.mu.Lock()
		v.width, v.widthExact = &cr, true
		v.mu.Unlock()
		width = widthOf(&cr)
		names = make([][]string, len(fss))
		for i, fs := range fss {
			if fs == nil {
				continue
			}
			names[i] = make([]string, len(fs.classes))
			for c, cv := range fs.classes {
				names[i][c] = className(cv, r.class.numeric, width)
			}
		}
	}
	d := dealRows(l, fss, names, len(v.shards))
	if len(d.rare) > 0 {
		ex := d.rare[:min(3, len(d.rare))]
		v.s.log.Warn("classes with fewer samples than shards are missing from some shards: a per-shard ImageFolder numbers classes differently there (class_to_idx), so labels differ between ranks; use fewer shards or leave these classes out",
			"table", v.s.location(), "version", v.snap.Version, "shards", len(v.shards), "rare_classes", len(d.rare), "example", fmt.Sprintf("%q has %d", ex[0].name, ex[0].n))
	}
	v.dealt = d
	return d, width, nil
}

// exactWidth is the padding width the deal computed.
func (v *Version) exactWidth() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.width == nil {
		return 0
	}
	return widthOf(v.width)
}

// warnClassSets warns, once per version, when a contiguous layout gives
// shards different class folders (see lacksExtremes, differentClasses).
func (v *Version) warnClassSets(sh *Shard) {
	v.mu.Lock()
	if v.classWarned {
		v.mu.Unlock()
		return
	}
	other := v.differentClasses(sh)
	var lo, hi, shLo, shHi float64
	var lacks bool
	if other == nil {
		lo, hi, shLo, shHi, lacks = v.lacksExtremes(sh)
	}
	v.classWarned = other != nil || lacks
	v.mu.Unlock()
	const fix = "--shard-layout contiguous splits rows into ranges: use the balanced layout (the default with --class-column) or read a single shard"
	if lacks {
		v.s.log.Warn("shard lacks classes the version has: a per-shard ImageFolder numbers the classes differently from other shards (class_to_idx), so labels differ between ranks; "+fix, "table", v.s.location(), "version", v.snap.Version, "shard", sh.k, "classes", len(sh.classes),
			"shard_class_range", fmt.Sprintf("%g..%g", shLo, shHi), "version_class_range", fmt.Sprintf("%g..%g", lo, hi))
	}
	if other != nil {
		only, missing := classDiff(sh.classes, other.classes)
		v.s.log.Warn("shards hold different classes: a per-shard ImageFolder numbers them differently (class_to_idx), so labels differ between ranks; "+fix, "table", v.s.location(), "version", v.snap.Version, "shard", sh.k, "classes", len(sh.classes),
			"other_shard", other.k, "other_classes", len(other.classes), "only_in_shard", only, "missing_from_shard", missing)
	}
}

// differentClasses returns a built shard of v whose class folders differ
// from sh's, or nil. It only compares shards already built (no I/O).
// Called with v.mu held.
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
