package sample

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/deltafs/deltafs/snapshot"
)

// ManifestName is the name of a shard's manifest; no sample takes it.
const ManifestName = "_samples.tsv"

// Shard is one shard of a version, with names, classes and sizes.
// Positions (0 .. Len-1) are the samples in shard order: data files in
// append order, rows in file order. Immutable once built; safe for
// concurrent use.
type Shard struct {
	v     *Version
	r     *resolved
	k     int
	start int64 // global number of position 0 (unique in the version)

	segs    []segment
	names   []string         // file name of each position
	byName  map[string]int32 // name -> position
	classOf []int32          // class folder of each position; nil without classes
	classes []string         // class folder names, sorted
	members [][]int32        // positions in each class folder
	dups    int              // samples renamed because their id was taken

	manifestOnce sync.Once
	manifest     []byte
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
	ref   FileRef
	fs    *fileSamples
}

// ordinal is the file-local live row of the segment's j-th sample.
func (sg *segment) ordinal(j int) int {
	if sg.ords != nil {
		return int(sg.ords[j])
	}
	return sg.local + j
}

// index names the shard's samples and sorts them into class folders.
func (sh *Shard) index(width int) error {
	r := sh.r
	n := 0
	for _, sg := range sh.segs {
		n += sg.n
	}
	sh.names = make([]string, n)
	sh.byName = make(map[string]int32, n)
	taken := make(map[string]int, n) // stem -> samples named from it so far
	var dupExample string
	if r.class != nil {
		sh.classOf = make([]int32, n)
	}
	classIdx := map[string]int32{}
	for _, sg := range sh.segs {
		for j := range sg.n {
			pos := sg.pos + j
			li := sg.ordinal(j)
			ext := sg.fs.ext(r, li)
			stem := fitName(sg.fs.stems[li], ext)
			if reserved(stem + ext) {
				stem = escapeFirst(stem)
			}
			name := stem + ext
			if c := taken[stem]; c > 0 {
				for {
					name = dupName(stem, c, ext)
					c++
					if _, clash := sh.byName[name]; !clash {
						break
					}
				}
				sh.dups++
				if dupExample == "" {
					dupExample = stem
				}
				taken[stem] = c
			} else {
				taken[stem] = 1
			}
			sh.names[pos] = name
			sh.byName[name] = int32(pos)
			if r.class == nil {
				continue
			}
			cname := className(sg.fs.classes[sg.fs.class[li]], r.class.numeric, width)
			ci, ok := classIdx[cname]
			if !ok {
				ci = int32(len(sh.classes))
				classIdx[cname] = ci
				sh.classes = append(sh.classes, cname)
			}
			sh.classOf[pos] = ci
		}
	}
	if sh.dups > 0 {
		sh.v.s.log.Warn("rows share ids: every one is kept, the later ones renamed <id>~N", "table", sh.v.s.location(), "version", sh.v.snap.Version, "shard", sh.k, "renamed", sh.dups, "example", dupExample)
	}
	if r.class == nil {
		return nil
	}
	// Sort the class folders by name and renumber.
	order := make([]int32, len(sh.classes))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool { return sh.classes[order[a]] < sh.classes[order[b]] })
	renum := make([]int32, len(order))
	sorted := make([]string, len(order))
	for newIdx, old := range order {
		renum[old] = int32(newIdx)
		sorted[newIdx] = sh.classes[old]
	}
	sh.classes = sorted
	sh.members = make([][]int32, len(sorted))
	for pos, c := range sh.classOf {
		c = renum[c]
		sh.classOf[pos] = c
		sh.members[c] = append(sh.members[c], int32(pos))
	}
	return nil
}

// Version is the shard's version.
func (sh *Shard) Version() *Version { return sh.v }

// Index is the shard number.
func (sh *Shard) Index() int { return sh.k }

// Len is the number of samples.
func (sh *Shard) Len() int { return len(sh.names) }

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
		return len(sh.names)
	}
	return 0
}

// RootAt is the position of the i-th sample listed at the shard root.
func (sh *Shard) RootAt(i int) int { return i }

// Lookup finds a sample by file name in class folder c (-1: the shard
// root).
func (sh *Shard) Lookup(name string, c int) (int, bool) {
	pos, ok := sh.byName[name]
	if !ok {
		return 0, false
	}
	if sh.classOf != nil {
		return int(pos), int(sh.classOf[pos]) == c
	}
	return int(pos), c == -1
}

// Name is the file name of the sample at pos.
func (sh *Shard) Name(pos int) string { return sh.names[pos] }

// ClassOf is the class folder of the sample at pos (-1: the shard root).
func (sh *Shard) ClassOf(pos int) int {
	if sh.classOf == nil {
		return -1
	}
	return int(sh.classOf[pos])
}

// Path is the sample's path relative to the shard directory.
func (sh *Shard) Path(pos int) string {
	if c := sh.ClassOf(pos); c >= 0 {
		return sh.classes[c] + "/" + sh.names[pos]
	}
	return sh.names[pos]
}

func (sh *Shard) seg(pos int) (*segment, int) {
	i := sort.Search(len(sh.segs), func(i int) bool { return sh.segs[i].pos+sh.segs[i].n > pos })
	sg := &sh.segs[i]
	return sg, sg.ordinal(pos - sg.pos)
}

// Size is the exact size of the sample at pos, in bytes.
func (sh *Shard) Size(pos int) int64 {
	sg, li := sh.seg(pos)
	switch {
	case sh.r.mode == modeImage:
		return sh.r.pngSize
	case sg.fs.sizes == nil:
		return 0
	}
	return sg.fs.sizes[li]
}

// ID is the sample's id as escaped in its name (without a duplicate suffix
// or the extension).
func (sh *Shard) ID(pos int) string {
	sg, li := sh.seg(pos)
	return sg.fs.stems[li]
}

// Manifest is the content of _samples.tsv: one line per sample, in shard
// order: path relative to the shard directory, size in bytes, class folder
// ("" without classes), id (escaped as in the name), tab-separated. No
// field contains a tab or newline (names are escaped).
func (sh *Shard) Manifest() []byte {
	sh.manifestOnce.Do(func() {
		var b []byte
		for pos := range sh.names {
			b = append(b, sh.Path(pos)...)
			b = append(b, '\t')
			b = strconv.AppendInt(b, sh.Size(pos), 10)
			b = append(b, '\t')
			if c := sh.ClassOf(pos); c >= 0 {
				b = append(b, sh.classes[c]...)
			}
			b = append(b, '\t')
			b = append(b, sh.ID(pos)...)
			b = append(b, '\n')
		}
		sh.manifest = b
	})
	return sh.manifest
}

// ReadAt reads the content of the sample at pos, like io.ReaderAt but
// returning 0, nil at or past the end.
func (sh *Shard) ReadAt(ctx context.Context, pos int, p []byte, off int64) (int, error) {
	data, err := sh.Content(ctx, pos)
	if err != nil {
		sh.v.s.ctr.ReadErrors.Add(1)
		return 0, err
	}
	sh.v.s.ctr.Reads.Add(1)
	if off >= int64(len(data)) {
		return 0, nil
	}
	return copy(p, data[off:]), nil
}

// Content is the whole content of the sample at pos. The slice is shared
// and must not be modified.
func (sh *Shard) Content(ctx context.Context, pos int) ([]byte, error) {
	sg, li := sh.seg(pos)
	fs := sg.fs
	s, ver := sh.v.s, sh.v.snap.Version
	row := fs.rows[li]
	wrap := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return sh.v.fileErr(sg.ref.Path, err)
	}
	switch sh.r.mode {
	case modeJSON:
		blob, err := s.opts.Cache.Get(ctx, fs.jsonKey, func(ctx context.Context) ([]byte, error) {
			blob, _, err := sh.v.renderJSON(ctx, sh.fileOf(sg))
			return blob, err
		})
		if err != nil {
			return nil, wrap(err)
		}
		if blobLen(blob) != fs.n {
			return nil, wrap(fmt.Errorf("rendered %d rows, indexed %d", blobLen(blob), fs.n))
		}
		return blobValue(blob, li), nil
	case modeBytes:
		data, err := s.opts.Fetcher.Value(ctx, sg.ref, sh.r.data.phys, row)
		if err != nil {
			return nil, wrap(err)
		}
		return data, nil
	}
	im := sh.r.image
	key := CacheKey{Kind: "image", File: sg.ref.Path, Version: sg.ref.identity(), Column: sh.r.data.phys,
		Unit: strconv.FormatInt(row, 10) + "/" + sh.r.format + "/" + im.String()}
	var bad error
	render := func(ctx context.Context) ([]byte, error) {
		raw, err := s.opts.Fetcher.Value(ctx, sg.ref, sh.r.data.phys, row)
		if err != nil {
			return nil, wrap(err)
		}
		if int64(len(raw)) != im.Pixels() {
			bad = &SampleError{Table: s.location(), Version: ver, Path: sg.ref.Path, Row: row,
				Err: fmt.Errorf("column %s holds %d bytes, not %d for a %s image", sh.r.data.name, len(raw), im.Pixels(), im)}
			return nil, bad
		}
		out := make([]byte, 0, sh.r.pngSize)
		if sh.r.format == FormatPNM {
			return im.EncodePNM(out, raw), nil
		}
		return im.EncodePNG(out, raw), nil
	}
	var data []byte
	var err error
	if sh.r.pngSize <= smallImage {
		// Read whole by one FUSE request: caching would cost more than
		// encoding again.
		data, err = render(ctx)
	} else {
		data, err = s.rendered.Get(ctx, key, render)
	}
	if err != nil {
		if bad != nil {
			s.log.Error("sample fails with EIO: wrong pixel count", "err", bad)
		}
		return nil, err
	}
	return data, nil
}

// Fill reads what the sample at pos needs into the caches without encoding
// it: the page of its data column (or the file's rendered rows for JSON
// samples). It is how `deltafs warm` fills the disk cache ahead of a mount.
func (sh *Shard) Fill(ctx context.Context, pos int) error {
	sg, li := sh.seg(pos)
	if sh.r.mode == modeJSON {
		_, err := sh.Content(ctx, pos)
		return err
	}
	if _, err := sh.v.s.opts.Fetcher.Value(ctx, sg.ref, sh.r.data.phys, sg.fs.rows[li]); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return sh.v.fileErr(sg.ref.Path, err)
	}
	return nil
}

// smallImage is the encoded size up to which a sample is not kept in the
// rendered-image cache: the kernel reads it in one request, and then keeps
// it in its page cache.
const smallImage = 64 << 10

// fileOf finds the AddFile of a segment.
func (sh *Shard) fileOf(sg *segment) *snapshot.AddFile { return sh.v.snap.Files[sg.file] }

// String describes the shard for logs.
func (sh *Shard) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d shard %d/%d (%d samples)", sh.v.snap.Version, sh.k, len(sh.v.shards), len(sh.names))
	return b.String()
}
