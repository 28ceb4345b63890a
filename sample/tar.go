package sample

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The tar view of a shard: its samples as one POSIX tar archive, in shard
// order, in the layout WebDataset reads (members grouped by key):
//
//	<key><ext>   the sample's bytes, as the per-file view serves them
//	<key>.cls    the class folder's name, when the shard has classes
//
// A key is the sample's file name without its extension, with every '.'
// escaped as %2E (WebDataset splits a member name at the first dot of its
// base name): the same name as the per-file view's, stable across versions
// (it is the escaped id). Member headers are USTAR, or PAX where a name is
// longer than 100 bytes or not ASCII (archive/tar writes them); every
// member has mode 0444, owner 0:0 and the version's commit time (whole
// seconds). The archive ends with the two zero blocks POSIX asks for.
//
// Nothing is stored per sample: the size of every member follows from the
// index (the name's length and the sample's size), and the archive keeps
// the offset of every tarBlock-th sample's first member. A read at offset
// X formats the headers and reads the samples it covers, and only those.
// Columns other than the sample and its class are not written as .json
// members: their size is not known without reading them, and the size of
// the archive is exact at stat.

// TarExt is the extension of a shard's tar view (version/N/shard/K.tar).
const TarExt = ".tar"

// tarBlock is the number of samples between two kept offsets.
const tarBlock = 256

// clsExt is the extension of a class member.
const clsExt = ".cls"

// Tar is the tar view of a shard. Safe for concurrent use.
type Tar struct {
	sh    *Shard
	mtime time.Time
	offs  []int64 // offset of the first member of every tarBlock-th sample
	size  int64
}

// tarView is the shard's tar view, made on first use.
type tarView struct {
	once sync.Once
	t    *Tar
}

// Tar is the shard's tar view. The first call computes its layout from the
// index (no data is read), linear in the samples; bench ten-million's
// "tar layout, first stat" measures it (bench/RESULTS-ten-million.md).
func (sh *Shard) Tar() *Tar {
	sh.tar.once.Do(func() {
		t := &Tar{sh: sh, mtime: sh.v.Time().Truncate(time.Second)}
		t.offs = make([]int64, 0, sh.n/tarBlock+1)
		var off int64
		var key []byte
		for pos := range sh.n {
			if pos%tarBlock == 0 {
				t.offs = append(t.offs, off)
			}
			key = sh.appendKey(key[:0], pos)
			off += t.groupLen(pos, key)
		}
		if len(t.offs) == 0 {
			t.offs = append(t.offs, 0) // no samples: the end blocks alone
		}
		t.size = off + 2*tarBlockSize
		sh.tar.t = t
	})
	return sh.tar.t
}

// tarBlockSize is tar's record unit: headers are one block, contents are
// padded to whole blocks.
const tarBlockSize = 512

// Size is the exact size of the archive in bytes.
func (t *Tar) Size() int64 { return t.size }

// Shard is the shard the archive holds.
func (t *Tar) Shard() *Shard { return t.sh }

// appendKey appends the WebDataset key of the sample at pos: its file name
// without the extension, dots escaped.
func (sh *Shard) appendKey(b []byte, pos int) []byte {
	start := len(b)
	b = sh.appendStem(b, pos)
	if d, ok := sh.dups[int32(pos)]; ok {
		b = append(b, '~')
		b = strconv.AppendInt(b, int64(d), 10)
	}
	if bytes.IndexByte(b[start:], '.') < 0 {
		return b
	}
	esc := bytes.ReplaceAll(b[start:], []byte("."), []byte("%2E"))
	return append(b[:start], esc...)
}

// Key is the WebDataset key of the sample at pos in the tar view.
func (sh *Shard) Key(pos int) string { return string(sh.appendKey(nil, pos)) }

// ext is the extension of the sample at pos (".png").
func (sh *Shard) ext(pos int) string {
	sg, li := sh.seg(pos)
	return sg.fs.ext(sh.r, li)
}

// groupLen is the length of the members of the sample at pos, whose key
// is key.
func (t *Tar) groupLen(pos int, key []byte) int64 {
	sh := t.sh
	n := headerLen(len(key)+len(sh.ext(pos)), key) + padded(sh.Size(pos))
	if c := sh.ClassOf(pos); c >= 0 {
		n += headerLen(len(key)+len(clsExt), key) + padded(int64(len(sh.classes[c])))
	}
	return n
}

// padded is n rounded up to whole tar blocks.
func padded(n int64) int64 { return (n + tarBlockSize - 1) / tarBlockSize * tarBlockSize }

// headerLen is the length of the header(s) archive/tar writes for a
// member whose name is nameLen bytes: the key followed by an ASCII
// extension. One USTAR block when the name fits USTAR (at most 100 bytes,
// ASCII); else a PAX extended header (a block and its padded "path"
// record) before the USTAR block. TestTarHeaderLen checks it against
// archive/tar for every length and kind of name.
func headerLen(nameLen int, key []byte) int64 {
	if nameLen <= 100 && isASCII(key) {
		return tarBlockSize
	}
	return 2*tarBlockSize + padded(int64(paxRecordLen("path", nameLen)))
}

// paxRecordLen is the length of the PAX record "LEN KEY=VALUE\n", whose
// length field counts its own digits.
func paxRecordLen(key string, valueLen int) int {
	n := 1 + len(key) + 1 + valueLen + 1 // " key=value\n"
	digits := len(strconv.Itoa(n))
	if len(strconv.Itoa(n+digits)) > digits {
		digits++
	}
	return n + digits
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// header is the header of a member: archive/tar's bytes for it.
func (t *Tar) header(name []byte, size int64) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	err := w.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     string(name),
		Size:     size,
		Mode:     0o444,
		ModTime:  t.mtime,
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadAt fills p with the archive from offset off and returns the bytes
// filled: len(p) unless the archive ends first (0 at or past the end). It
// reads the samples the range covers; a sample that cannot be read fails
// the read (the error names its data file), as does one whose bytes
// differ in length from the index (the archive's layout depends on it).
func (t *Tar) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off >= t.size || len(p) == 0 {
		return 0, nil
	}
	sh := t.sh
	w := window{p: p[:min(int64(len(p)), t.size-off)], off: off}
	blk := sort.Search(len(t.offs), func(i int) bool { return t.offs[i] > off }) - 1
	at := t.offs[max(blk, 0)]
	pos := max(blk, 0) * tarBlock
	var key, name []byte
	for pos < sh.n && at < w.end() {
		key = sh.appendKey(key[:0], pos)
		start := at
		end := at + t.groupLen(pos, key)
		if end <= w.off {
			at, pos = end, pos+1
			continue
		}
		size := sh.Size(pos)
		name = append(append(name[:0], key...), sh.ext(pos)...)
		hdr, err := t.header(name, size)
		if err != nil {
			return 0, fmt.Errorf("%s: tar header of %s: %w", sh, sh.Path(pos), err)
		}
		at = w.put(at, hdr)
		if w.overlaps(at, size) {
			if err := t.putSample(ctx, &w, at, pos, size); err != nil {
				return 0, err
			}
		}
		at += size
		at = w.zeros(at, padded(size)-size)
		if c := sh.ClassOf(pos); c >= 0 {
			cls := []byte(sh.classes[c])
			name = append(append(name[:0], key...), clsExt...)
			hdr, err := t.header(name, int64(len(cls)))
			if err != nil {
				return 0, fmt.Errorf("%s: tar header of %s: %w", sh, sh.Path(pos), err)
			}
			at = w.put(at, hdr)
			at = w.put(at, cls)
			at = w.zeros(at, padded(int64(len(cls)))-int64(len(cls)))
		}
		if at != end {
			return 0, fmt.Errorf("%s: tar members of %s are %d bytes, the layout says %d", sh, sh.Path(pos), at-start, end-start)
		}
		pos++
	}
	if pos == sh.n {
		w.zeros(at, t.size-at) // the end-of-archive blocks
	}
	return len(w.p), nil
}

// putSample puts the part of the sample at pos (size bytes at archive
// offset at) that the window covers into it: read as that range when the
// shard's mode reads samples in part (a large sample is then not decoded
// again for every read of the archive), else from its whole content. The
// sample must be size bytes long, as the layout has it: checked whole, or,
// read in part, by its end when the window covers it.
func (t *Tar) putSample(ctx context.Context, w *window, at int64, pos int, size int64) error {
	sh := t.sh
	wrong := func(n int64) error {
		return fmt.Errorf("%s: sample %s has %d bytes, the index says %d", sh, sh.Path(pos), n, size)
	}
	rm, ok := sh.r.mode.(rangeMode)
	if !ok || !rm.ranges(sh) {
		data, err := sh.Content(ctx, pos)
		if err != nil {
			return err
		}
		if int64(len(data)) != size {
			return wrong(int64(len(data)))
		}
		w.put(at, data)
		return nil
	}
	sg, li := sh.seg(pos)
	lo, hi := max(at, w.off), min(at+size, w.end())
	n, err := rm.readAt(ctx, sh, sg, li, w.p[lo-w.off:hi-w.off], lo-at)
	if err != nil {
		return err
	}
	if int64(n) < hi-lo {
		return wrong(lo - at + int64(n))
	}
	if hi == at+size {
		var past [1]byte
		if n, err := rm.readAt(ctx, sh, sg, li, past[:], size); err != nil || n > 0 {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s: sample %s is longer than the %d bytes the index says", sh, sh.Path(pos), size)
		}
	}
	return nil
}

// window is the part of the archive a read asks for: p, from archive
// offset off. Parts of the archive are put at their offset; what falls
// outside the window is skipped.
type window struct {
	p   []byte
	off int64
}

// end is the archive offset just past the window.
func (w *window) end() int64 { return w.off + int64(len(w.p)) }

// overlaps reports whether [at, at+n) meets the window.
func (w *window) overlaps(at, n int64) bool { return at < w.end() && at+n > w.off }

// put copies part, which sits at archive offset at, into the window, and
// returns the offset after it.
func (w *window) put(at int64, part []byte) int64 {
	end := at + int64(len(part))
	if w.overlaps(at, int64(len(part))) {
		lo := max(at, w.off)
		hi := min(end, w.end())
		copy(w.p[lo-w.off:hi-w.off], part[lo-at:hi-at])
	}
	return end
}

// zeros zeroes [at, at+n) in the window and returns at+n.
func (w *window) zeros(at, n int64) int64 {
	end := at + n
	if w.overlaps(at, n) {
		lo := max(at, w.off)
		hi := min(end, w.end())
		clear(w.p[lo-w.off : hi-w.off])
	}
	return end
}
