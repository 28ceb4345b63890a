package sample

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/snapshot"
)

// A data file's sample index (fileSamples) is kept in the page.Cache as kind
// "index", so that a remount with a warm disk cache lists samples without
// scanning data files again. It is keyed by the content identity of what it
// is built from: the data file (path and size), its deletion vector, the
// resolved spec and, for JSON samples, the schema.

// indexFormat names the encoding below; change it when the encoding changes.
const indexFormat = "idx2"

// indexKey is the cache key of a file's index; spec is resolved.fileSpec.
func indexKey(f *snapshot.AddFile, ref page.FileRef, spec string) page.Key {
	return ref.CacheKey("index", indexFormat+":"+hashString(spec), f.DeletionVector.UniqueID())
}

// The encoding: little-endian, every slice as its length (uvarint) and
// its elements, strings as their length and bytes:
//
//	n, rows []uint32, ids (kind byte, hash, ints []int64, nulls []uint32,
//	arena []byte, ends []uint32), class []uint16, classes (s, null),
//	sizes []uint32 (+1 presence byte), exts []uint8 (+1 presence byte),
//	extTab, jsonKey (Kind, File, Version, Column, Unit)
//
// Decoding checks every length against what is left, and the indexes
// against their tables: a cached index is a file too.

func encodeIndex(fs *fileSamples) ([]byte, error) {
	var e indexEncoder
	e.uint(uint64(fs.n))
	e.u32s(fs.rows)
	e.b = append(e.b, byte(fs.ids.kind))
	e.str(fs.ids.hash)
	e.uint(uint64(len(fs.ids.ints)))
	for _, x := range fs.ids.ints {
		e.b = binary.LittleEndian.AppendUint64(e.b, uint64(x))
	}
	e.u32s(fs.ids.nulls)
	e.bytes(fs.ids.arena)
	e.u32s(fs.ids.ends)
	e.uint(uint64(len(fs.class)))
	for _, c := range fs.class {
		e.b = binary.LittleEndian.AppendUint16(e.b, c)
	}
	e.uint(uint64(len(fs.classes)))
	for _, c := range fs.classes {
		e.str(c.s)
		e.bool(c.null)
	}
	e.bool(fs.sizes != nil)
	e.u32s(fs.sizes)
	e.bool(fs.exts != nil)
	e.bytes(fs.exts)
	e.uint(uint64(len(fs.extTab)))
	for _, x := range fs.extTab {
		e.str(x)
	}
	k := fs.jsonKey
	for _, x := range []string{k.Kind, k.File, k.Version, k.Column, k.Unit} {
		e.str(x)
	}
	return e.b, nil
}

type indexEncoder struct{ b []byte }

func (e *indexEncoder) uint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *indexEncoder) bool(x bool) {
	if x {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *indexEncoder) str(s string)   { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *indexEncoder) bytes(b []byte) { e.uint(uint64(len(b))); e.b = append(e.b, b...) }
func (e *indexEncoder) u32s(v []uint32) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.b = binary.LittleEndian.AppendUint32(e.b, x)
	}
}

// indexDecoder reads what indexEncoder wrote; the first error sticks.
type indexDecoder struct {
	b   []byte
	err error
}

func (d *indexDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cached sample index: %s", what)
	}
}

func (d *indexDecoder) uint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a length of elements of size bytes each, bounded by what
// is left.
func (d *indexDecoder) count(size int) int {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)/size) {
		d.fail("a length past the end")
		return 0
	}
	return int(n)
}

func (d *indexDecoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *indexDecoder) bool() bool  { b := d.take(1); return len(b) == 1 && b[0] == 1 }
func (d *indexDecoder) str() string { return string(d.take(d.count(1))) }
func (d *indexDecoder) bytes() []byte {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	return append([]byte(nil), d.take(n)...)
}
func (d *indexDecoder) u32s() []uint32 {
	n := d.count(4)
	if n == 0 {
		return nil
	}
	b := d.take(4 * n)
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func decodeIndex(blob []byte) (*fileSamples, error) {
	d := &indexDecoder{b: blob}
	fs := &fileSamples{}
	fs.n = int(d.uint())
	fs.rows = d.u32s()
	if k := d.take(1); len(k) == 1 {
		fs.ids.kind = idKind(k[0])
	}
	fs.ids.hash = d.str()
	if n := d.count(8); n > 0 {
		b := d.take(8 * n)
		fs.ids.ints = make([]int64, n)
		for i := range fs.ids.ints {
			fs.ids.ints[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	fs.ids.nulls = d.u32s()
	fs.ids.arena = d.bytes()
	fs.ids.ends = d.u32s()
	if n := d.count(2); n > 0 {
		b := d.take(2 * n)
		fs.class = make([]uint16, n)
		for i := range fs.class {
			fs.class[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
	}
	nc := d.count(2)
	for range nc {
		s := d.str()
		fs.classes = append(fs.classes, classVal{s: s, null: d.bool()})
	}
	hasSizes := d.bool()
	fs.sizes = d.u32s()
	if hasSizes && fs.sizes == nil {
		fs.sizes = []uint32{}
	}
	hasExts := d.bool()
	fs.exts = d.bytes()
	if hasExts && fs.exts == nil {
		fs.exts = []uint8{}
	}
	for range d.count(1) {
		fs.extTab = append(fs.extTab, d.str())
	}
	k := &fs.jsonKey
	for _, p := range []*string{&k.Kind, &k.File, &k.Version, &k.Column, &k.Unit} {
		*p = d.str()
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, errors.New("cached sample index: bytes after its end")
	}
	if err := fs.check(); err != nil {
		return nil, fmt.Errorf("cached sample index: %w", err)
	}
	fs.mem = fs.size()
	return fs, nil
}

// check verifies that a decoded index is consistent.
func (fs *fileSamples) check() error {
	n := fs.n
	switch {
	case n < 0 || n > maxFileRows:
		return fmt.Errorf("%d rows", n)
	case fs.rows != nil && len(fs.rows) != n:
		return fmt.Errorf("%d row numbers for %d rows", len(fs.rows), n)
	case fs.class != nil && len(fs.class) != n:
		return fmt.Errorf("%d classes for %d rows", len(fs.class), n)
	case fs.sizes != nil && len(fs.sizes) != n:
		return fmt.Errorf("%d sizes for %d rows", len(fs.sizes), n)
	case fs.exts != nil && len(fs.exts) != n:
		return fmt.Errorf("%d extensions for %d rows", len(fs.exts), n)
	}
	for i := 1; i < len(fs.rows); i++ {
		if fs.rows[i] <= fs.rows[i-1] {
			return errors.New("row numbers out of order")
		}
	}
	for _, c := range fs.class {
		if int(c) >= len(fs.classes) {
			return fmt.Errorf("class %d of %d", c, len(fs.classes))
		}
	}
	for _, e := range fs.exts {
		if int(e) >= len(fs.extTab) {
			return fmt.Errorf("extension %d of %d", e, len(fs.extTab))
		}
	}
	ids := &fs.ids
	switch ids.kind {
	case idDerived:
	case idInts:
		if len(ids.ints) != n {
			return fmt.Errorf("%d ids for %d rows", len(ids.ints), n)
		}
		for i, x := range ids.nulls {
			if int(x) >= n || i > 0 && x <= ids.nulls[i-1] {
				return errors.New("null ids out of range or order")
			}
		}
	case idStrings:
		if len(ids.ends) != n {
			return fmt.Errorf("%d ids for %d rows", len(ids.ends), n)
		}
		prev := uint32(0)
		for _, e := range ids.ends {
			if e < prev || int(e) > len(ids.arena) {
				return errors.New("id offsets out of range or order")
			}
			prev = e
		}
	default:
		return fmt.Errorf("id kind %d", ids.kind)
	}
	return nil
}

// cachedIndex returns a file's sample index from the page.Cache, building
// (and storing) it on a miss. built reports whether it was built here.
func (v *Version) cachedIndex(ctx context.Context, r *resolved, f *snapshot.AddFile, ref page.FileRef) (fs *fileSamples, built bool, err error) {
	key := indexKey(f, ref, r.fileSpec(v))
	var fresh *fileSamples
	blob, err := v.s.opts.Cache.Get(ctx, key, func(ctx context.Context) ([]byte, error) {
		b, err := v.buildFile(ctx, r, f, ref)
		if err != nil {
			return nil, err
		}
		fresh = b
		return encodeIndex(b)
	})
	if fresh != nil {
		return fresh, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fs, err = decodeIndex(blob); err == nil {
		fs.ref = ref
		if fs.ids.kind == idDerived {
			fs.ids.hash = pathHash(f.Path)
		}
		return fs, false, nil
	}
	// A cached index that does not decode (checksums passed, so an old
	// encoding): build it again, uncached.
	v.s.log.Warn("rebuilding a sample index the cache holds in an unknown form", "version", v.snap.Version, "file", f.Path, "err", err)
	fs, err = v.buildFile(ctx, r, f, ref)
	return fs, err == nil, err
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
