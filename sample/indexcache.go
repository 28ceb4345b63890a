package sample

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/deltafs/deltafs/snapshot"
)

// A data file's sample index (fileSamples) is kept in the BlobCache as kind
// "index", so that a remount with a warm disk cache lists samples without
// scanning data files again. It is keyed by the content identity of what it
// is built from: the data file (path and size), its deletion vector, the
// resolved spec and, for JSON samples, the schema.

// indexFormat names the encoding below; change it when the encoding changes.
const indexFormat = "idx1"

// fileIndex is the encoded form of a fileSamples (gob).
type fileIndex struct {
	N         int
	Rows      []int64
	Stems     []string
	Class     []int32
	Classes   []string
	ClassNull []bool
	Sizes     []int64
	HasSizes  bool
	Exts      []uint8
	HasExts   bool
	ExtTab    []string
	JSONKey   CacheKey
}

func indexKey(f *snapshot.AddFile, ref FileRef, r *resolved, schemaID string) CacheKey {
	spec := r.key
	if r.mode == modeJSON {
		spec += "\x00" + schemaID
	}
	return CacheKey{Kind: "index", File: f.Path, Version: ref.identity(),
		Column: indexFormat + ":" + hashString(spec), Unit: f.DeletionVector.UniqueID()}
}

func encodeIndex(fs *fileSamples) ([]byte, error) {
	x := fileIndex{N: fs.n, Rows: fs.rows, Stems: fs.stems, Class: fs.class, Sizes: fs.sizes, HasSizes: fs.sizes != nil,
		Exts: fs.exts, HasExts: fs.exts != nil, ExtTab: fs.extTab, JSONKey: fs.jsonKey}
	for _, c := range fs.classes {
		x.Classes = append(x.Classes, c.s)
		x.ClassNull = append(x.ClassNull, c.null)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&x); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decodeIndex(blob []byte) (*fileSamples, error) {
	var x fileIndex
	if err := gob.NewDecoder(bytes.NewReader(blob)).Decode(&x); err != nil {
		return nil, fmt.Errorf("cached sample index: %w", err)
	}
	if len(x.Rows) != x.N || len(x.Stems) != x.N || (x.HasSizes && len(x.Sizes) != x.N) || (x.HasExts && len(x.Exts) != x.N) ||
		len(x.Classes) != len(x.ClassNull) || (x.Class != nil && len(x.Class) != x.N) {
		return nil, fmt.Errorf("cached sample index of %d rows is inconsistent", x.N)
	}
	fs := &fileSamples{n: x.N, rows: x.Rows, stems: x.Stems, class: x.Class, extTab: x.ExtTab, jsonKey: x.JSONKey}
	if x.HasSizes {
		fs.sizes = append(make([]int64, 0, x.N), x.Sizes...)
	}
	if x.HasExts {
		fs.exts = append(make([]uint8, 0, x.N), x.Exts...)
		for _, e := range fs.exts {
			if int(e) >= len(fs.extTab) {
				return nil, fmt.Errorf("cached sample index: extension %d of %d", e, len(fs.extTab))
			}
		}
	}
	for i, s := range x.Classes {
		fs.classes = append(fs.classes, classVal{s: s, null: x.ClassNull[i]})
	}
	for _, c := range fs.class {
		if c < 0 || int(c) >= len(fs.classes) {
			return nil, fmt.Errorf("cached sample index: class %d of %d", c, len(fs.classes))
		}
	}
	fs.mem = fs.size()
	return fs, nil
}

// cachedIndex returns a file's sample index from the BlobCache, building
// (and storing) it on a miss. built reports whether it was built here.
func (v *Version) cachedIndex(ctx context.Context, r *resolved, f *snapshot.AddFile, ref FileRef) (fs *fileSamples, built bool, err error) {
	key := indexKey(f, ref, r, v.schemaID())
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
		return fs, false, nil
	}
	// A cached index that does not decode (checksums passed, so an old
	// encoding): build it again, uncached.
	v.s.log.Warn("rebuilding a sample index the cache holds in an unknown form", "version", v.snap.Version, "file", f.Path, "err", err)
	fs, err = v.buildFile(ctx, r, f, ref)
	return fs, err == nil, err
}
