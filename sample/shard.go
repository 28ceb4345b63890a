package sample

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/deltafs/deltafs/internal/packed"
	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/snapshot"
)

// ListName is the name of a shard's sample list; no sample takes it. (The
// shard's extent list is extents.ListName, _extents.tsv.)
const ListName = "_samples.tsv"

// Shard is one shard of a version, with names, classes and sizes.
// Positions (0 .. Len-1) are the samples in shard order: data files in
// append order, rows in file order. Immutable once built; safe for
// concurrent use.
//
// A shard holds no per-sample strings: a name is its data file's id stem
// (formatted from the compact id column), a duplicate suffix for the few
// samples whose id another took first (dups), and the extension. Names
// are found by a hash table of stems (4 bytes a slot, 0.7 full), or, when
// the ids are integers increasing in shard order (as `deltafs import`
// writes them), by binary search without any table.
type Shard struct {
	v     *Version
	r     *resolved
	k     int
	start int64 // global number of position 0 (unique in the version)
	n     int

	segs    []segment
	ordered bool              // integer ids, strictly increasing: no table, no duplicates
	table   []uint32          // stem hash -> position+1 of the first sample with that stem; nil when ordered
	dups    map[int32]int32   // position -> N of a sample named <stem>~N
	dupList map[int32][]int32 // first position of a stem -> the positions renamed ~1, ~2, ...
	exts    []string          // the extensions in use, for lookups
	classes []string          // class folder names, sorted
	members [][]int32         // positions in each class folder

	listOffs []int64 // byte offset of every listBlock-th line
	listSize int64

	tar tarView // the shard as one tar archive, laid out on first use
}

// segment is the part of one data file inside a shard: n of its live rows
// (ordinals among the file's live rows), either the range [local,
// local+n) or, in a balanced layout, the listed ords.
type segment struct {
	pos   int // first position in the shard
	local int
	n     int
	ords  []int32 // nil: the range from local
	file  int     // index in the version's layout
	add   *snapshot.AddFile
	ref   page.FileRef
	fs    *fileSamples
	cmap  []uint16 // the file's class values -> the shard's class folders
}

// boundReadAhead ends the segment's read-ahead after its last row
// (page.FileRef.ReadAheadEnd): the rows after it are another shard's.
func (sg *segment) boundReadAhead() {
	if sg.n > 0 {
		sg.ref.ReadAheadEnd = sg.fs.row(sg.ordinal(sg.n-1)) + 1
	}
}

// ordinal is the file-local live row of the segment's j-th sample.
func (sg *segment) ordinal(j int) int {
	if sg.ords != nil {
		return int(sg.ords[j])
	}
	return sg.local + j
}

// index names the shard's samples (finding the duplicates) and sorts them
// into class folders.
func (sh *Shard) index(width int) error {
	r := sh.r
	for _, sg := range sh.segs {
		sh.n += sg.n
	}
	extSeen := map[string]bool{}
	for _, sg := range sh.segs {
		if sg.fs.exts == nil {
			extSeen[r.mode.ext()] = true
		}
		for _, e := range sg.fs.extTab {
			extSeen[e] = true
		}
	}
	for e := range extSeen {
		sh.exts = append(sh.exts, e)
	}
	sort.Strings(sh.exts)
	if r.class != nil {
		if err := sh.indexClasses(width); err != nil {
			return err
		}
	}
	sh.ordered = sh.increasingInts()
	if !sh.ordered {
		sh.indexNames()
	}
	if len(sh.dups) > 0 {
		var example []byte
		for first := range sh.dupList {
			example = sh.appendStem(nil, int(first))
			break
		}
		sh.v.s.log.Warn("rows share ids: every one is kept, the later ones renamed <id>~N", "table", sh.v.s.location(), "version", sh.v.snap.Version, "shard", sh.k, "renamed", len(sh.dups), "example", string(example))
	}
	sh.indexList()
	return nil
}

// increasingInts reports whether every id is an integer, none null, each
// larger than the one before in shard order: then names are unique and
// found by binary search.
func (sh *Shard) increasingInts() bool {
	prev, first := int64(0), true
	for i := range sh.segs {
		sg := &sh.segs[i]
		ids := &sg.fs.ids
		if ids.kind != idInts || len(ids.nulls) > 0 {
			return false
		}
		for j := range sg.n {
			x := ids.ints[sg.ordinal(j)]
			if !first && x <= prev {
				return false
			}
			prev, first = x, false
		}
	}
	return true
}

// indexNames builds the stem table, numbering the samples whose stem an
// earlier one has.
func (sh *Shard) indexNames() {
	size := 1
	for size < sh.n*10/7+1 {
		size <<= 1
	}
	sh.table = make([]uint32, size)
	mask := uint64(size - 1)
	var stem, other []byte
	count := map[int32]int32{}
	for pos := range sh.n {
		stem = sh.appendStem(stem[:0], pos)
		for slot := xxhash.Sum64(stem) & mask; ; slot = (slot + 1) & mask {
			at := sh.table[slot]
			if at == 0 {
				sh.table[slot] = uint32(pos + 1)
				break
			}
			other = sh.appendStem(other[:0], int(at-1))
			if string(other) == string(stem) {
				first := int32(at - 1)
				count[first]++
				if sh.dups == nil {
					sh.dups, sh.dupList = map[int32]int32{}, map[int32][]int32{}
				}
				sh.dups[int32(pos)] = count[first]
				sh.dupList[first] = append(sh.dupList[first], int32(pos))
				break
			}
		}
	}
}

// indexClasses gives each segment its class folder mapping and lists the
// folders' members.
func (sh *Shard) indexClasses(width int) error {
	r := sh.r
	idx := map[string]int{}
	const unused = 0xffff // a file's class value no row of the shard has
	for i := range sh.segs {
		sg := &sh.segs[i]
		sg.cmap = make([]uint16, len(sg.fs.classes))
		for c := range sg.cmap {
			sg.cmap[c] = unused
		}
		for j := range sg.n {
			c := sg.fs.class[sg.ordinal(j)]
			if sg.cmap[c] != unused {
				continue
			}
			name := className(sg.fs.classes[c], r.class.numeric, width)
			ci, ok := idx[name]
			if !ok {
				if len(sh.classes) == maxClassFolders-1 {
					return fmt.Errorf("%s version %d shard %d: more than %d class folders", sh.v.s.location(), sh.v.snap.Version, sh.k, maxClassFolders-1)
				}
				ci = len(sh.classes)
				idx[name] = ci
				sh.classes = append(sh.classes, name)
			}
			sg.cmap[c] = uint16(ci)
		}
	}
	// Sort the folders by name and renumber.
	order := make([]int, len(sh.classes))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return sh.classes[order[a]] < sh.classes[order[b]] })
	renum := make([]uint16, len(order))
	sorted := make([]string, len(order))
	for newIdx, old := range order {
		renum[old] = uint16(newIdx)
		sorted[newIdx] = sh.classes[old]
	}
	sh.classes = sorted
	counts := make([]int, len(sorted))
	for i := range sh.segs {
		sg := &sh.segs[i]
		for c := range sg.cmap {
			if sg.cmap[c] != unused {
				sg.cmap[c] = renum[sg.cmap[c]]
			}
		}
		for j := range sg.n {
			counts[sg.cmap[sg.fs.class[sg.ordinal(j)]]]++
		}
	}
	sh.members = make([][]int32, len(sorted))
	for c, n := range counts {
		sh.members[c] = make([]int32, 0, n)
	}
	for i := range sh.segs {
		sg := &sh.segs[i]
		for j := range sg.n {
			c := sg.cmap[sg.fs.class[sg.ordinal(j)]]
			sh.members[c] = append(sh.members[c], int32(sg.pos+j))
		}
	}
	return nil
}

// maxClassFolders bounds a shard's class folders (16 bits of a folder's
// inode number).
const maxClassFolders = 1 << 16

// Version is the shard's version.
func (sh *Shard) Version() *Version { return sh.v }

// Index is the shard number.
func (sh *Shard) Index() int { return sh.k }

// Len is the number of samples.
func (sh *Shard) Len() int { return sh.n }

// Local is the position of the sample numbered g in the version (the
// inverse of Global); it may be out of range.
func (sh *Shard) Local(g int64) int { return int(g - sh.start) }

// Global is the version-wide index of the sample at pos (unique in the
// version, below 2^32 for inode numbers).
func (sh *Shard) Global(pos int) int64 { return sh.start + int64(pos) }

// Classes are the class folder names, sorted; nil without a class column.
func (sh *Shard) Classes() []string { return sh.classes }

// HasClasses reports whether samples live in class folders.
func (sh *Shard) HasClasses() bool { return sh.r.class != nil }

// Class returns the positions in class folder c.
func (sh *Shard) Class(c int) []int32 { return sh.members[c] }

// ClassIndex finds a class folder by name.
func (sh *Shard) ClassIndex(name string) (int, bool) {
	i := sort.SearchStrings(sh.classes, name)
	return i, i < len(sh.classes) && sh.classes[i] == name
}

// RootLen is the number of samples listed at the shard root: all of them
// without class folders, none with.
func (sh *Shard) RootLen() int {
	if sh.r.class == nil {
		return sh.n
	}
	return 0
}

// RootAt is the position of the i-th sample listed at the shard root.
func (sh *Shard) RootAt(i int) int { return i }

// ClassOf is the class folder of the sample at pos (-1: the shard root).
func (sh *Shard) ClassOf(pos int) int {
	if sh.r.class == nil {
		return -1
	}
	sg, li := sh.seg(pos)
	return int(sg.cmap[sg.fs.class[li]])
}

func (sh *Shard) seg(pos int) (*segment, int) {
	i := sort.Search(len(sh.segs), func(i int) bool { return sh.segs[i].pos+sh.segs[i].n > pos })
	sg := &sh.segs[i]
	return sg, sg.ordinal(pos - sg.pos)
}

// appendStem appends the visible stem of the sample at pos: its escaped
// id, fitted to the name length limit, with its first byte escaped when
// the name would be one deltafs reserves.
func (sh *Shard) appendStem(b []byte, pos int) []byte {
	sg, li := sh.seg(pos)
	ext := sg.fs.ext(sh.r, li)
	start := len(b)
	b = sg.fs.ids.appendStem(b, li, sg.fs.row(li))
	if len(b)-start > MaxNameBytes-nameReserve-len(ext) {
		fitted := fitName(string(b[start:]), ext)
		b = append(b[:start], fitted...)
	}
	if len(b) > start && b[start] == '_' && reserved(string(b[start:])+ext) {
		esc := escapeFirst(string(b[start:]))
		b = append(b[:start], esc...)
	}
	return b
}

// AppendName appends the file name of the sample at pos.
func (sh *Shard) AppendName(b []byte, pos int) []byte {
	b = sh.appendStem(b, pos)
	if d, ok := sh.dups[int32(pos)]; ok {
		b = append(b, '~')
		b = strconv.AppendInt(b, int64(d), 10)
	}
	sg, li := sh.seg(pos)
	return append(b, sg.fs.ext(sh.r, li)...)
}

// Name is the file name of the sample at pos.
func (sh *Shard) Name(pos int) string { return string(sh.AppendName(nil, pos)) }

// Path is the sample's path relative to the shard directory.
func (sh *Shard) Path(pos int) string {
	if c := sh.ClassOf(pos); c >= 0 {
		return sh.classes[c] + "/" + sh.Name(pos)
	}
	return sh.Name(pos)
}

// Lookup finds a sample by file name in class folder c (-1: the shard
// root).
func (sh *Shard) Lookup(name string, c int) (int, bool) {
	pos, ok := sh.find(name)
	if !ok || sh.ClassOf(pos) != c {
		return 0, false
	}
	return pos, true
}

// find finds a sample by file name: candidates from the name's shape,
// each confirmed by formatting its name.
func (sh *Shard) find(name string) (int, bool) {
	var buf []byte
	is := func(pos int) bool {
		buf = sh.AppendName(buf[:0], pos)
		return string(buf) == name
	}
	// <stem>~N<ext>: a duplicate ('~' is escaped in ids; a fitted stem's
	// "~h<hex>" is not a number).
	if i := strings.LastIndexByte(name, '~'); i > 0 && !sh.ordered {
		d := 0
		j := i + 1
		for j < len(name) && name[j] >= '0' && name[j] <= '9' && j-i < 10 {
			d = d*10 + int(name[j]-'0')
			j++
		}
		if j > i+1 && d > 0 {
			if first, ok := sh.findStem(name[:i]); ok {
				if l := sh.dupList[int32(first)]; d <= len(l) && is(int(l[d-1])) {
					return int(l[d-1]), true
				}
			}
		}
	}
	for _, ext := range sh.exts {
		if !strings.HasSuffix(name, ext) {
			continue
		}
		if pos, ok := sh.findStem(name[:len(name)-len(ext)]); ok && is(pos) {
			return pos, true
		}
	}
	return 0, false
}

// findStem finds the first sample with a visible stem.
func (sh *Shard) findStem(stem string) (int, bool) {
	if sh.n == 0 {
		return 0, false
	}
	if sh.ordered {
		x, err := strconv.ParseInt(stem, 10, 64)
		if err != nil {
			return 0, false
		}
		pos := sort.Search(sh.n, func(p int) bool {
			sg, li := sh.seg(p)
			return sg.fs.ids.ints[li] >= x
		})
		return pos, pos < sh.n
	}
	mask := uint64(len(sh.table) - 1)
	var other []byte
	for slot := xxhash.Sum64String(stem) & mask; ; slot = (slot + 1) & mask {
		at := sh.table[slot]
		if at == 0 {
			return 0, false
		}
		other = sh.appendStem(other[:0], int(at-1))
		if string(other) == stem {
			return int(at - 1), true
		}
	}
}

// Size is the exact size of the sample at pos, in bytes.
func (sh *Shard) Size(pos int) int64 {
	if n := sh.r.mode.size(); n >= 0 {
		return n
	}
	sg, li := sh.seg(pos)
	return sg.fs.sizeOf(li)
}

// ID is the sample's id as escaped in its name (without a duplicate suffix
// or the extension, not fitted).
func (sh *Shard) ID(pos int) string {
	sg, li := sh.seg(pos)
	return string(sg.fs.ids.appendStem(nil, li, sg.fs.row(li)))
}

// MemBytes estimates the memory the shard's own index holds (beyond its
// files' metadata).
func (sh *Shard) MemBytes() int64 {
	n := int64(len(sh.table))*4 + int64(len(sh.listOffs))*8 + int64(len(sh.dups))*48
	for _, m := range sh.members {
		n += int64(cap(m)) * 4
	}
	for i := range sh.segs {
		n += int64(cap(sh.segs[i].ords))*4 + int64(cap(sh.segs[i].cmap))*2 + 128
	}
	return n
}

// The shard's sample list, _samples.tsv: one line per sample, in shard
// order: path relative to the shard directory, size in bytes, class folder
// ("" without classes), id (escaped as in the name), tab-separated. No
// field contains a tab or newline (names are escaped). It is generated
// from the index for the range read (ListAt), never held whole: the
// index keeps the byte offset of every listBlock-th line.

// listBlock is the number of lines between two kept offsets.
const listBlock = 1024

// listLine appends the sample list's line of the sample at pos.
func (sh *Shard) listLine(b []byte, pos int) []byte {
	b = append(b, sh.Path(pos)...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, sh.Size(pos), 10)
	b = append(b, '\t')
	if c := sh.ClassOf(pos); c >= 0 {
		b = append(b, sh.classes[c]...)
	}
	b = append(b, '\t')
	b = append(b, sh.ID(pos)...)
	return append(b, '\n')
}

// indexList computes the sample list's size and block offsets, from the
// lengths of its fields (no line is formatted, except for the rare names
// that are fitted or escaped).
func (sh *Shard) indexList() {
	sh.listOffs = make([]int64, 0, sh.n/listBlock+2)
	var off int64
	var buf []byte
	pos := 0
	for i := range sh.segs {
		sg := &sh.segs[i]
		for j := range sg.n {
			if pos%listBlock == 0 {
				sh.listOffs = append(sh.listOffs, off)
			}
			li := sg.ordinal(j)
			idLen := sg.fs.ids.stemLen(li, sg.fs.row(li))
			ext := sg.fs.ext(sh.r, li)
			stemLen := idLen
			if idLen+len(ext) > MaxNameBytes-nameReserve || sg.fs.ids.mayReserve(li) {
				buf = sh.appendStem(buf[:0], pos)
				stemLen = len(buf)
			}
			n := int64(stemLen + len(ext) + 1 + decimalLen(sh.sizeAt(sg, li)) + 1 + 1 + idLen + 1)
			if d, ok := sh.dups[int32(pos)]; ok {
				n += int64(1 + decimalLen(int64(d)))
			}
			if sh.r.class != nil {
				n += 2 * int64(len(sh.classes[sg.cmap[sg.fs.class[li]]])) // the folder in the path and the class field
				n++                                                       // the path's '/'
			}
			off += n
			pos++
		}
	}
	sh.listSize = off
}

// sizeAt is the size of live row li of segment sg's file.
func (sh *Shard) sizeAt(sg *segment, li int) int64 {
	if n := sh.r.mode.size(); n >= 0 {
		return n
	}
	return sg.fs.sizeOf(li)
}

// decimalLen is the length of x in decimal.
func decimalLen(x int64) int {
	n := 1
	if x < 0 {
		n++
		if x == math.MinInt64 {
			return 20
		}
		x = -x
	}
	for x >= 10 {
		x /= 10
		n++
	}
	return n
}

// ListSize is the size of the sample list, _samples.tsv, in bytes.
func (sh *Shard) ListSize() int64 { return sh.listSize }

// ListAt fills p with the sample list, _samples.tsv, from offset off,
// returning the bytes filled (0 at or past the end).
func (sh *Shard) ListAt(p []byte, off int64) int {
	if off >= sh.listSize || len(p) == 0 {
		return 0
	}
	blk := sort.Search(len(sh.listOffs), func(i int) bool { return sh.listOffs[i] > off }) - 1
	at := sh.listOffs[blk]
	var line []byte
	got := 0
	for pos := blk * listBlock; pos < sh.Len() && got < len(p); pos++ {
		line = sh.listLine(line[:0], pos)
		end := at + int64(len(line))
		if end > off {
			from := max(0, off-at)
			got += copy(p[got:], line[from:])
			off = end
		}
		at = end
	}
	return got
}

// List is the whole sample list, _samples.tsv (for tests and small shards).
func (sh *Shard) List() []byte {
	b := make([]byte, sh.listSize)
	return b[:sh.ListAt(b, 0)]
}

// ReadAt reads the content of the sample at pos, like io.ReaderAt but
// returning 0, nil at or past the end.
//
// A mode whose samples can be read in part (rangeMode) reads only the
// range asked: a large sample read in small reads is decoded once.
func (sh *Shard) ReadAt(ctx context.Context, pos int, p []byte, off int64) (int, error) {
	var n int
	var err error
	if rm, ok := sh.r.mode.(rangeMode); ok && rm.ranges(sh) {
		sg, li := sh.seg(pos)
		n, err = rm.readAt(ctx, sh, sg, li, p, off)
	} else {
		var data []byte
		if data, err = sh.Content(ctx, pos); err == nil {
			n = packed.CopyAt(p, data, off)
		}
	}
	if err != nil {
		sh.v.s.ctr.ReadErrors.Add(1)
		return 0, err
	}
	sh.v.s.ctr.Reads.Add(1)
	return n, nil
}

// Content is the whole content of the sample at pos. The slice is shared
// and must not be modified.
func (sh *Shard) Content(ctx context.Context, pos int) ([]byte, error) {
	sg, li := sh.seg(pos)
	return sh.r.mode.content(ctx, sh, sg, li)
}

// SampleKey names the sample at pos by content identity, for caching each
// sample's bytes as one unit (the disk-cache extents of package
// cache/materialize): the data file and its size, the physical row, and
// what of the spec shapes the bytes (the data column; the image encoding
// and shape; for JSON samples the schema). Versions and shards sharing a
// data file share the keys. It never fails: the shard was built from
// readable files (the error is for callers that treat keys uniformly).
func (sh *Shard) SampleKey(pos int) (page.Key, error) {
	sg, li := sh.seg(pos)
	col, unit := sh.r.mode.sampleKey(sh.v, sg.fs.row(li))
	return sg.ref.CacheKey("sample", col, unit), nil
}

// Fill reads what the sample at pos needs into the caches without encoding
// it: the page of its data column (or the file's rendered rows for JSON
// samples). It is how `deltafs warm` fills the disk cache ahead of a mount.
func (sh *Shard) Fill(ctx context.Context, pos int) error {
	sg, li := sh.seg(pos)
	return sh.r.mode.fill(ctx, sh, sg, li)
}

// readErr is the error of a failed read of a sample of segment sg: the
// request's own end as it is, else a FileError naming the data file.
func (sh *Shard) readErr(ctx context.Context, sg *segment, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sh.v.fileErr(sg.ref.Path, err)
}

// String describes the shard for logs.
func (sh *Shard) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d shard %d/%d (%d samples)", sh.v.snap.Version, sh.k, len(sh.v.shards), sh.n)
	return b.String()
}
