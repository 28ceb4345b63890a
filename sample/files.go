package sample

import (
	"context"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/deltafs/deltafs/snapshot"
)

// fileSamples is the sample metadata of one data file under one resolved
// spec: its live rows, their ids, classes, sizes and extensions. It depends
// only on (file identity, deletion vector, spec identity) — and, for JSON
// samples, the schema — so versions sharing a file share it.
type fileSamples struct {
	ref     FileRef // the file, with its storage identity
	n       int
	rows    []int64    // physical row index of each live row, ascending
	stems   []string   // escaped, length-bounded ids
	class   []int32    // index into classes; nil without a class column
	classes []classVal // distinct class values
	sizes   []int64    // per sample; nil when the mode fixes the size
	exts    []uint8    // index into extTab; nil when the mode fixes the extension
	extTab  []string
	jsonKey CacheKey // modeJSON: the rendered rows of the file
	mem     int64    // estimated bytes held
}

// classVal is one class value before padding.
type classVal struct {
	s    string
	null bool
}

func (fs *fileSamples) ext(r *resolved, i int) string {
	if fs.exts == nil {
		return r.ext
	}
	return fs.extTab[fs.exts[i]]
}

// fileKey is the memo key of a file's sample metadata.
func fileKey(f *snapshot.AddFile, ref FileRef, r *resolved, schemaID string) string {
	k := f.Path + "\x00" + ref.identity() + "\x00" + f.DeletionVector.UniqueID() + "\x00" + r.key
	if r.mode == modeJSON {
		k += "\x00" + schemaID
	}
	return k
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
	key := fileKey(f, ref, r, v.schemaID())
	fs, err := v.s.files.get(key, func() (*fileSamples, error) {
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
	if f.NumRecords >= 0 && int64(fs.n) != f.LiveRows() {
		return nil, v.fileErr(f.Path, fmt.Errorf("the log says %d live rows (%d records less %d deleted), the file has %d",
			f.LiveRows(), f.NumRecords, dvCard(f), fs.n))
	}
	if c := l.claim[i]; c >= 0 && int64(fs.n) != c {
		return nil, v.fileErr(f.Path, fmt.Errorf("the footer says %d live rows, the file has %d", c, fs.n))
	}
	return fs, nil
}

// schemaID identifies the schema JSON samples are rendered with.
func (v *Version) schemaID() string {
	return strconv.Itoa(len(v.schemaJSON)) + ":" + hashString(string(v.schemaJSON))
}

func (v *Version) buildFile(ctx context.Context, r *resolved, f *snapshot.AddFile, ref FileRef) (*fileSamples, error) {
	fs := &fileSamples{ref: ref}
	var cols []string
	idAt, classAt, pathAt := -1, -1, -1
	add := func(c *column) int {
		if c == nil {
			return -1
		}
		cols = append(cols, c.name)
		return len(cols) - 1
	}
	idAt, classAt = add(r.id), add(r.class)
	var paths []string // modeBytes with a path column: each row's path
	if r.mode == modeBytes {
		pathAt = add(r.path)
	}
	classIdx := map[classVal]int32{}
	extIdx := map[string]uint8{}
	h := ""
	if r.id == nil {
		h = pathHash(f.Path)
	}
	visit := func(row int64, vals []any) {
		fs.rows = append(fs.rows, row)
		var id string
		if idAt >= 0 {
			if s, ok := valueString(vals[idAt]); ok {
				id = EscapeName(s) // the text "__null__" escapes: never NullName
			} else {
				id = NullName
			}
		} else {
			id = derivedID(h, row)
		}
		fs.stems = append(fs.stems, id)
		if classAt >= 0 {
			s, ok := valueString(vals[classAt])
			cv := classVal{s: s, null: !ok}
			ci, seen := classIdx[cv]
			if !seen {
				ci = int32(len(fs.classes))
				classIdx[cv] = ci
				fs.classes = append(fs.classes, cv)
			}
			fs.class = append(fs.class, ci)
		}
		if pathAt >= 0 {
			p, _ := vals[pathAt].(string)
			paths = append(paths, p)
		}
	}
	if len(cols) > 0 || r.mode != modeJSON {
		if err := v.s.opts.Rows.Scan(ctx, v.snap, f, cols, visit); err != nil {
			return nil, err
		}
	}
	if r.mode == modeBytes {
		// Sizes and extensions come from the bytes reads will serve,
		// fetched the way reads fetch them: the pages decoded here stay in
		// the cache (and feed read-ahead), so a cold epoch reads the data
		// column from storage once, not once for the index and again for
		// the samples.
		fs.sizes = make([]int64, 0, len(fs.rows))
		fs.exts = make([]uint8, 0, len(fs.rows))
		for j, row := range fs.rows {
			data, err := v.s.opts.Fetcher.Value(ctx, ref, r.data.phys, row)
			if err != nil {
				return nil, err
			}
			fs.sizes = append(fs.sizes, int64(len(data)))
			ext := sniffExt(data)
			if ext == "" && paths != nil {
				ext = pathExt(paths[j])
			}
			if ext == "" {
				ext = ".bin"
			}
			ei, seen := extIdx[ext]
			if !seen {
				if len(fs.extTab) == 255 {
					ext, ei = ".bin", extIdx[".bin"]
				} else {
					ei = uint8(len(fs.extTab))
					extIdx[ext] = ei
					fs.extTab = append(fs.extTab, ext)
				}
			}
			fs.exts = append(fs.exts, ei)
		}
	}
	if r.mode == modeJSON {
		fs.jsonKey = CacheKey{Kind: "json", File: f.Path, Version: ref.identity(), Column: v.schemaID(), Unit: f.DeletionVector.UniqueID()}
		blob, rows, err := v.renderJSON(ctx, f)
		if err != nil {
			return nil, err
		}
		if len(cols) == 0 {
			for _, row := range rows {
				visit(row, nil)
			}
		} else if len(rows) != len(fs.rows) {
			return nil, fmt.Errorf("scan gave %d rows, JSON scan %d", len(fs.rows), len(rows))
		}
		fs.sizes = make([]int64, len(rows))
		for j := range rows {
			fs.sizes[j] = int64(len(blobValue(blob, j)))
		}
		// Keep the rendering cached: reads will want it soon.
		_, _ = v.s.opts.Cache.Get(ctx, fs.jsonKey, func(context.Context) ([]byte, error) { return blob, nil })
	}
	fs.n = len(fs.rows)
	fs.mem = fs.size()
	return fs, nil
}

// renderJSON renders the live rows of f, one JSON object and "\n" each,
// packed as a blob, with their physical row indexes.
func (v *Version) renderJSON(ctx context.Context, f *snapshot.AddFile) ([]byte, []int64, error) {
	var vals [][]byte
	var rows []int64
	var buf []byte
	var offs []int
	err := v.s.opts.Rows.ScanJSON(ctx, v.snap, f, func(row int64, js []byte) {
		offs = append(offs, len(buf))
		buf = append(buf, js...)
		buf = append(buf, '\n')
		rows = append(rows, row)
	})
	if err != nil {
		return nil, nil, err
	}
	vals = make([][]byte, len(offs))
	for j, o := range offs {
		end := len(buf)
		if j+1 < len(offs) {
			end = offs[j+1]
		}
		vals[j] = buf[o:end]
	}
	return packBlob(0, vals, nil), rows, nil
}

func (fs *fileSamples) size() int64 {
	n := int64(unsafe.Sizeof(*fs))
	n += int64(cap(fs.rows))*8 + int64(cap(fs.class))*4 + int64(cap(fs.sizes))*8 + int64(cap(fs.exts))
	for _, s := range fs.stems {
		n += 16 + int64(len(s))
	}
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
