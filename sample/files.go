package sample

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/deltafs/deltafs/filter"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// fileSamples is the sample metadata of one data file under one resolved
// spec: its live rows, their ids, classes, sizes and extensions, held
// compactly (about 13 bytes a row for integral ids and raw bytes). It
// depends only on (file identity, deletion vector, spec identity) — and,
// for JSON samples, the schema — so versions sharing a file share it.
type fileSamples struct {
	ref     page.FileRef // the file, with its storage identity
	n       int
	rows    []uint32   // physical row of each live row, ascending; nil: the ordinal (nothing deleted)
	ids     idColumn   // the ids, as name stems
	class   []uint16   // index into classes; nil without a class column
	classes []classVal // distinct class values
	sizes   []uint32   // per sample; nil when the mode fixes the size
	exts    []uint8    // index into extTab; nil when the mode fixes the extension
	extTab  []string
	jsonKey page.Key // jsonMode: the rendered rows of the file
	mem     int64    // estimated bytes held
}

// maxFileClasses bounds the distinct classes of one data file (and of a
// shard: a class folder's inode number has 16 bits for it).
const maxFileClasses = 1 << 16

// classVal is one class value before padding.
type classVal struct {
	s    string
	null bool
}

// row is the physical row of live row ord.
func (fs *fileSamples) row(ord int) int64 {
	if fs.rows == nil {
		return int64(ord)
	}
	return int64(fs.rows[ord])
}

// size is the bytes of live row ord's sample (modes with a fixed size
// answer themselves).
func (fs *fileSamples) sizeOf(ord int) int64 { return int64(fs.sizes[ord]) }

// ext is the extension of live row i's sample (modes with a fixed
// extension answer themselves).
func (fs *fileSamples) ext(r *resolved, i int) string {
	if fs.exts == nil {
		return r.mode.ext()
	}
	return fs.extTab[fs.exts[i]]
}

// fileKey is the memo key of a file's sample metadata; spec is
// resolved.fileSpec.
func fileKey(f *snapshot.AddFile, ref page.FileRef, spec string) string {
	return f.Path + "\x00" + ref.Identity() + "\x00" + f.DeletionVector.UniqueID() + "\x00" + spec
}

// fileSamples returns file i's sample metadata, building it on first use,
// or a FileError: the file cannot be read, or holds a different number of
// live rows than the log claims.
func (v *Version) fileSamples(ctx context.Context, r *resolved, l *layout, i int) (*fileSamples, error) {
	f := l.files[i]
	ref, err := v.s.opts.Fetcher.Identify(ctx, l.refs[i])
	if err != nil {
		return nil, v.fileErr(f.Path, err)
	}
	key := fileKey(f, ref, r.fileSpec(v))
	fs, err := v.s.files.get(ctx, key, func(ctx context.Context) (*fileSamples, error) {
		fs, built, err := v.cachedIndex(ctx, r, f, ref)
		if err != nil {
			return nil, err
		}
		if built {
			v.s.ctr.FilesIndexed.Add(1)
		} else {
			v.s.ctr.FilesFromCache.Add(1)
		}
		v.s.ctr.SamplesIndexed.Add(int64(fs.n))
		v.s.ctr.IndexBytes.Add(fs.mem)
		return fs, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, v.fileErr(f.Path, err)
	}
	// Whatever the log or the footer claims must be what the file holds:
	// shards were placed by the claims, and a disagreement means damage.
	// (A file whose rows a filter selects had its live rows checked
	// against the log as they were read: buildFile.)
	if v.decision(f) != filter.Some && f.NumRecords >= 0 && int64(fs.n) != f.LiveRows() {
		return nil, v.fileErr(f.Path, fmt.Errorf("the log says %d live rows (%d records less %d deleted), the file has %d",
			f.LiveRows(), f.NumRecords, dvCard(f), fs.n))
	}
	if c := l.claim[i]; c >= 0 && int64(fs.n) != c {
		return nil, v.fileErr(f.Path, fmt.Errorf("the footer says %d live rows, the file has %d", c, fs.n))
	}
	return fs, nil
}

// fileBuild is a file's sample metadata while it is built.
type fileBuild struct {
	v       *Version
	f       *snapshot.AddFile
	fs      *fileSamples
	rows    []uint32 // the live rows found so far, ascending
	dense   bool     // rows so far are 0, 1, 2, ...
	ids     idBuilder
	scanned bool       // the rows were scanned (else the mode finds them)
	vals    [][]string // the values of the mode's columns, live row by row
	// filtered: rows holds only the live rows the filter keeps (a subset
	// of the file's live rows, as with a deletion vector).
	filtered bool
	whereKey string // the filter's Key when filtered
}

func (b *fileBuild) addRow(row int64) {
	if b.dense && row != int64(len(b.rows)) {
		b.dense = false
	}
	b.rows = append(b.rows, uint32(row))
}

func (v *Version) buildFile(ctx context.Context, r *resolved, f *snapshot.AddFile, ref page.FileRef) (*fileSamples, error) {
	fs := &fileSamples{ref: ref}
	bd := &fileBuild{v: v, f: f, fs: fs, dense: true}
	// The columns to read, each once whatever roles it serves (the id,
	// the class, the mode's, the filter's: `--id-column path` with the
	// mode's `path`, `--class-column label --id-column label`).
	var cols []string
	at := func(name string) int {
		i := slices.Index(cols, name)
		if i < 0 {
			cols = append(cols, name)
			i = len(cols) - 1
		}
		return i
	}
	add := func(c *column) int {
		if c == nil {
			return -1
		}
		return at(c.name)
	}
	idAt, classAt := add(r.id), add(r.class)
	modeCols := r.mode.columns()
	modeAt := make([]int, len(modeCols))
	for k, c := range modeCols {
		modeAt[k] = add(c)
	}
	bd.vals = make([][]string, len(modeCols))
	// The filter's columns, when it selects rows of this file: read with
	// the others.
	var where []int
	if r.filter != nil && v.decision(f) == filter.Some {
		bd.filtered, bd.whereKey = true, r.filter.Key()
		for _, c := range r.filter.ColumnNames() {
			where = append(where, at(c))
		}
	}
	var keep []bool
	live := int64(0) // live rows read, kept or not
	ids := &bd.ids
	switch {
	case r.id == nil:
		ids.col = idColumn{kind: idDerived, hash: pathHash(f.Path)}
	case integralTypes[r.id.typ]:
		ids.col.kind = idInts
	default:
		ids.col.kind = idStrings
	}
	var classes classIndex
	var tooMany error
	batch := func(b *scan.Batch) error {
		live += int64(len(b.Rows))
		if where != nil {
			keep = slices.Grow(keep[:0], len(b.Rows))[:len(b.Rows)]
			r.filter.Match(b, where, keep)
		}
		for i, row := range b.Rows {
			if where != nil && !keep[i] {
				continue
			}
			bd.addRow(row)
			if idAt >= 0 {
				v := &b.Cols[idAt]
				switch {
				case v.IsNull(i):
					ids.addNull()
				case v.Kind == scan.KindInt && ids.col.kind == idInts:
					ids.addInt(v.Int[i])
				default:
					s, _ := valueString(v.Value(i))
					ids.addText(s)
				}
			} else {
				ids.n++
			}
			if classAt >= 0 {
				ci, err := classes.of(&b.Cols[classAt], i)
				if err != nil {
					tooMany = fmt.Errorf("class column %s: %w", r.class.name, err)
					return tooMany
				}
				fs.class = append(fs.class, ci)
			}
			for k := range modeCols {
				bd.vals[k] = append(bd.vals[k], string(b.Cols[modeAt[k]].Bytes(i)))
			}
		}
		return nil
	}
	if len(cols) > 0 || !r.mode.findsRows() {
		bd.scanned = true
		if err := v.s.opts.Rows.Columns(ctx, v.snap, f, cols, batch); err != nil {
			return nil, err
		}
	}
	fs.classes = classes.vals
	if tooMany != nil {
		return nil, tooMany
	}
	if bd.filtered && f.NumRecords >= 0 && live != f.LiveRows() {
		return nil, fmt.Errorf("the log says %d live rows (%d records less %d deleted), the file has %d",
			f.LiveRows(), f.NumRecords, dvCard(f), live)
	}
	if err := r.mode.index(ctx, bd); err != nil {
		return nil, err
	}
	fs.n = len(bd.rows)
	if !bd.dense {
		fs.rows = clip(bd.rows)
	}
	fs.ids = ids.done()
	fs.class = clip(fs.class)
	fs.mem = fs.size()
	return fs, nil
}

// size is the memory the metadata holds, in bytes.
func (fs *fileSamples) size() int64 {
	n := int64(unsafe.Sizeof(*fs))
	n += int64(cap(fs.rows))*4 + int64(cap(fs.class))*2 + int64(cap(fs.sizes))*4 + int64(cap(fs.exts)) + fs.ids.size()
	for _, c := range fs.classes {
		n += 24 + int64(len(c.s))
	}
	return n
}

// dvCard is the cardinality f's deletion vector claims (0 without one).
func dvCard(f *snapshot.AddFile) int64 {
	if f.DeletionVector == nil {
		return 0
	}
	return f.DeletionVector.Cardinality
}

// classIndex numbers a file's distinct class values as rows are read.
type classIndex struct {
	vals  []classVal
	ints  map[int64]uint16
	strs  map[string]uint16
	other map[classVal]uint16
	null  int // index of the null class + 1; 0: none yet
}

// of is the index of value i of v, adding it when new.
func (c *classIndex) of(v *scan.Vector, i int) (uint16, error) {
	add := func(cv classVal) (uint16, error) {
		if len(c.vals) == maxFileClasses {
			return 0, fmt.Errorf("more than %d distinct values in one data file", maxFileClasses)
		}
		c.vals = append(c.vals, cv)
		return uint16(len(c.vals) - 1), nil
	}
	if v.IsNull(i) {
		if c.null == 0 {
			ci, err := add(classVal{null: true})
			if err != nil {
				return 0, err
			}
			c.null = int(ci) + 1
		}
		return uint16(c.null - 1), nil
	}
	switch v.Kind {
	case scan.KindInt:
		x := v.Int[i]
		if ci, ok := c.ints[x]; ok {
			return ci, nil
		}
		ci, err := add(classVal{s: strconv.FormatInt(x, 10)})
		if err == nil {
			if c.ints == nil {
				c.ints = map[int64]uint16{}
			}
			c.ints[x] = ci
		}
		return ci, err
	case scan.KindBytes:
		if p, ok := v.Type.(*snapshot.PrimitiveType); ok && p.Name == "string" {
			b := v.Bytes(i)
			if ci, ok := c.strs[string(b)]; ok {
				return ci, nil
			}
			ci, err := add(classVal{s: string(b)})
			if err == nil {
				if c.strs == nil {
					c.strs = map[string]uint16{}
				}
				c.strs[string(b)] = ci
			}
			return ci, err
		}
	}
	s, _ := valueString(v.Value(i))
	cv := classVal{s: s}
	if ci, ok := c.other[cv]; ok {
		return ci, nil
	}
	ci, err := add(cv)
	if err == nil {
		if c.other == nil {
			c.other = map[classVal]uint16{}
		}
		c.other[cv] = ci
	}
	return ci, err
}
