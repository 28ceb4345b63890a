package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltafs/deltafs/storage"
)

// Deletion vectors (PROTOCOL.md, "Deletion Vector Format"). A descriptor
// points at the vector: inline ('i', Z85 in the log), in a file named from
// a UUID relative to the table root ('u'), or at an absolute path ('p').
// A file starts with a version byte (1); each vector in it is a big-endian
// int32 size, the data, and the big-endian CRC-32 (IEEE) of the data. The
// data is a little-endian int32 magic (1681511377) followed by the 64-bit
// portable RoaringBitmap format: a uint64 bucket count, then per bucket a
// uint32 key and a 32-bit RoaringBitmap (see decodeDVBytes for the older
// native format, also read).

const (
	dvMagicPortable = 1681511377
	dvMagicNative   = 1681511376 // older format, big-endian; PROTOCOL.md's inline example
	dvFileVersion   = 1
	dvUUIDLen       = 20 // Z85 characters of a 16-byte UUID
)

// deletionVectorKey is the storage key of the file a 'u' or 'p'
// descriptor points at.
func deletionVectorKey(root string, dv *DeletionVector) (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDv
		if len(s) < dvUUIDLen {
			return "", fmt.Errorf("deletion vector path %q is shorter than a UUID", s)
		}
		prefix, enc := s[:len(s)-dvUUIDLen], s[len(s)-dvUUIDLen:]
		raw, err := z85Decode(enc)
		if err != nil {
			return "", fmt.Errorf("deletion vector path %q: %w", s, err)
		}
		name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])
		if prefix == "" {
			return name, nil
		}
		return fileKey(root, prefix+"/"+name)
	case "p":
		return fileKey(root, dv.PathOrInlineDv)
	}
	return "", fmt.Errorf("deletion vector storage type %q has no file", dv.StorageType)
}

// deletedRows loads, checks and caches the deletion vector of f. It
// returns a copy: callers may modify it.
func (t *Log) deletedRows(ctx context.Context, v int64, f *AddFile) (*roaring64.Bitmap, error) {
	dv := f.DeletionVector
	id := dv.UniqueID()
	t.mu.Lock()
	bm, ok := t.dvs.Get(id)
	t.mu.Unlock()
	if ok {
		if err := checkCardinality(bm, dv, f.NumRecords); err != nil {
			return nil, t.err(v, "", fmt.Errorf("deletion vector of %s: %w", f.Path, err))
		}
		return bm.Clone(), nil
	}
	bm, _, err := t.dvReads.Do(ctx, id, func(ctx context.Context) (*roaring64.Bitmap, error) {
		bm, key, err := t.loadDV(ctx, dv)
		if err != nil {
			return nil, t.err(v, key, fmt.Errorf("deletion vector of %s: %w", f.Path, err))
		}
		t.mu.Lock()
		t.dvs.Add(id, bm, 1)
		t.mu.Unlock()
		return bm, nil
	})
	if err != nil {
		return nil, t.err(v, "", err) // as is when the load failed, this caller's context error otherwise
	}
	if err := checkCardinality(bm, dv, f.NumRecords); err != nil {
		return nil, t.err(v, "", fmt.Errorf("deletion vector of %s: %w", f.Path, err))
	}
	return bm.Clone(), nil
}

// loadDV reads and decodes a descriptor's vector; key is the file read
// ("" for inline vectors).
func (t *Log) loadDV(ctx context.Context, dv *DeletionVector) (bm *roaring64.Bitmap, key string, err error) {
	if dv.StorageType == "i" {
		bm, err := decodeInlineDV(dv)
		return bm, "", err
	}
	key, err = deletionVectorKey(t.st.Location(), dv)
	if err != nil {
		return nil, "", err
	}
	off := int64(0)
	if dv.Offset != nil {
		off = int64(*dv.Offset)
	}
	size := int64(dv.SizeInBytes)
	if size < 0 {
		return nil, key, corruptf("negative deletion vector size %d", size)
	}
	// One read covers the version byte and the vector when it is near the
	// start of the file (the common case: offset 1).
	var head, framed []byte
	if off <= 4096 {
		all, err := readClaimed(ctx, t.st, key, 0, off+size+8)
		if err != nil {
			return nil, key, err
		}
		bm, err := decodeDVFile(all, dv)
		return bm, key, err
	}
	if head, err = storage.ReadRange(ctx, t.st, key, 0, 1); err != nil {
		return nil, key, storageCause(err)
	}
	if framed, err = readClaimed(ctx, t.st, key, off, size+8); err != nil {
		return nil, key, err
	}
	bm, err = decodeFramedDV(head[0], framed, dv)
	return bm, key, err
}

// maxUncheckedRead is the largest read whose size comes from a claim of
// the log (a deletion vector's offset and size) that is made without
// checking the object's size first; a larger claim costs a Stat.
const maxUncheckedRead = 1 << 20

// readClaimed reads n bytes at off of key, where off and n are claims of
// the log: a claim past the end of the object is refused before a buffer
// of its size is allocated.
func readClaimed(ctx context.Context, st storage.Storage, key string, off, n int64) ([]byte, error) {
	if n > maxUncheckedRead {
		info, err := st.Stat(ctx, key)
		if err != nil {
			return nil, storageCause(err)
		}
		if off > info.Size || n > info.Size-off {
			return nil, corruptf("the log claims %d bytes at offset %d of a %d-byte file", n, off, info.Size)
		}
	}
	data, err := storage.ReadRange(ctx, st, key, off, n)
	if err != nil {
		return nil, storageCause(err)
	}
	return data, nil
}

// decodeDVFile decodes the vector dv describes from the bytes of its file
// (from the start, at least through the vector).
func decodeDVFile(file []byte, dv *DeletionVector) (*roaring64.Bitmap, error) {
	off := int64(0)
	if dv.Offset != nil {
		off = int64(*dv.Offset)
	}
	if len(file) == 0 || off < 0 || off > int64(len(file)) {
		return nil, corruptf("deletion vector at offset %d of a %d-byte file", off, len(file))
	}
	return decodeFramedDV(file[0], file[off:], dv)
}

// decodeFramedDV checks the file's version byte and one framed vector,
// decodes it and checks it against its descriptor.
func decodeFramedDV(version byte, framed []byte, dv *DeletionVector) (*roaring64.Bitmap, error) {
	if version != dvFileVersion {
		return nil, corruptf("deletion vector file version %d, want %d", version, dvFileVersion)
	}
	data, err := unframeDV(framed, dv.SizeInBytes)
	if err != nil {
		return nil, err
	}
	bm, err := decodeDVBytes(data)
	if err != nil {
		return nil, err
	}
	if err := checkCardinality(bm, dv, -1); err != nil {
		return nil, err
	}
	return bm, nil
}

// unframeDV checks one framed vector (size, data, CRC) and returns its
// data.
func unframeDV(framed []byte, size int32) ([]byte, error) {
	if size < 0 || len(framed) < 8 || int64(len(framed)) < int64(size)+8 {
		return nil, corruptf("deletion vector: %d bytes cannot hold a vector of %d", len(framed), size)
	}
	got := int32(binary.BigEndian.Uint32(framed))
	if got != size {
		return nil, corruptf("deletion vector: stored size %d, descriptor says %d", got, size)
	}
	data := framed[4 : 4+size]
	want := binary.BigEndian.Uint32(framed[4+size:])
	if sum := crc32.ChecksumIEEE(data); sum != want {
		return nil, corruptf("deletion vector: checksum %08x, stored %08x", sum, want)
	}
	return data, nil
}

// decodeInlineDV decodes an inline ('i') descriptor.
func decodeInlineDV(dv *DeletionVector) (*roaring64.Bitmap, error) {
	raw, err := z85Decode(dv.PathOrInlineDv)
	if err != nil {
		return nil, corruptf("inline deletion vector: %v", err)
	}
	if dv.SizeInBytes < 0 || int(dv.SizeInBytes) > len(raw) {
		return nil, corruptf("inline deletion vector: %d bytes, descriptor says %d", len(raw), dv.SizeInBytes)
	}
	bm, err := decodeDVBytes(raw[:dv.SizeInBytes])
	if err != nil {
		return nil, err
	}
	if err := checkCardinality(bm, dv, -1); err != nil {
		return nil, err
	}
	return bm, nil
}

// decodeDVBytes decodes a serialised RoaringBitmapArray: the portable
// format (little-endian magic 1681511377, then the 64-bit portable
// RoaringBitmap format), or the older native one that PROTOCOL.md's inline
// example uses (big-endian magic 1681511376, a big-endian int32 count of
// 32-bit bitmaps, then each as a big-endian int32 size and the bitmap; the
// i-th bitmap holds the rows whose high 32 bits are i). The structure is
// validated before roaring reads it (bucket counts against the bytes
// present, keys strictly increasing, nothing left over), and a panic in
// roaring becomes an error.
func decodeDVBytes(b []byte) (bm *roaring64.Bitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, corruptf("deletion vector: roaring decoder failed: %v", r)
		}
	}()
	if len(b) < 4 {
		return nil, corruptf("deletion vector: %d bytes, too short for the magic", len(b))
	}
	var portable []byte
	switch {
	case binary.LittleEndian.Uint32(b) == dvMagicPortable:
		portable, err = checkPortable(b[4:])
	case binary.BigEndian.Uint32(b) == dvMagicNative:
		portable, err = nativeToPortable(b[4:])
	default:
		return nil, corruptf("deletion vector: bad magic %08x", binary.LittleEndian.Uint32(b))
	}
	if err != nil {
		return nil, err
	}
	bm = roaring64.New()
	if _, err := bm.ReadFrom(bytes.NewReader(portable)); err != nil {
		return nil, corruptf("deletion vector: %v", err)
	}
	return bm, nil
}

// checkPortable validates the 64-bit portable format and returns it
// without its empty buckets (Spark writes every bucket up to the last, and
// roaring64 misbehaves on empty containers).
func checkPortable(body []byte) ([]byte, error) {
	if len(body) < 8 {
		return nil, corruptf("deletion vector: truncated bucket count")
	}
	n := binary.LittleEndian.Uint64(body)
	rest := body[8:]
	// A bucket is at least a 4-byte key and an 8-byte empty bitmap.
	if n > uint64(len(rest))/12 {
		return nil, corruptf("deletion vector: %d buckets cannot fit in %d bytes", n, len(rest))
	}
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, len(body)), 0)
	kept := uint64(0)
	prev := int64(-1)
	for i := uint64(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, corruptf("deletion vector: truncated bucket %d", i)
		}
		key := int64(binary.LittleEndian.Uint32(rest))
		if key <= prev {
			return nil, corruptf("deletion vector: bucket keys not increasing (%d after %d)", key, prev)
		}
		prev = key
		r := bytes.NewReader(rest[4:])
		var b32 roaring.Bitmap
		if _, err := b32.ReadFrom(r); err != nil {
			return nil, corruptf("deletion vector: bucket %d: %v", i, err)
		}
		size := len(rest) - 4 - r.Len()
		if !b32.IsEmpty() {
			out = append(out, rest[:4+size]...)
			kept++
		}
		rest = rest[4+size:]
	}
	if len(rest) != 0 {
		return nil, corruptf("deletion vector: %d bytes after the bitmap", len(rest))
	}
	binary.LittleEndian.PutUint64(out, kept)
	return out, nil
}

// nativeToPortable validates the native format and rewrites it in the
// portable one, without empty bitmaps.
func nativeToPortable(body []byte) ([]byte, error) {
	if len(body) < 4 {
		return nil, corruptf("deletion vector: truncated bitmap count")
	}
	n := int64(int32(binary.BigEndian.Uint32(body)))
	rest := body[4:]
	if n < 0 || n > int64(len(rest))/12 {
		return nil, corruptf("deletion vector: %d bitmaps cannot fit in %d bytes", n, len(rest))
	}
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, len(body)+8), 0)
	kept := uint64(0)
	for i := int64(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, corruptf("deletion vector: truncated bitmap %d", i)
		}
		size := int64(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if size < 0 || size > int64(len(rest)) {
			return nil, corruptf("deletion vector: bitmap %d of %d bytes in %d", i, size, len(rest))
		}
		var b32 roaring.Bitmap
		r := bytes.NewReader(rest[:size])
		if _, err := b32.ReadFrom(r); err != nil || r.Len() != 0 {
			return nil, corruptf("deletion vector: bitmap %d: bad serialisation (%v)", i, err)
		}
		if !b32.IsEmpty() {
			out = binary.LittleEndian.AppendUint32(out, uint32(i))
			out = append(out, rest[:size]...)
			kept++
		}
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return nil, corruptf("deletion vector: %d bytes after the bitmaps", len(rest))
	}
	binary.LittleEndian.PutUint64(out, kept)
	return out, nil
}

// checkCardinality cross-checks a decoded vector with its descriptor (and
// with the file's row count when known, numRecords >= 0).
func checkCardinality(bm *roaring64.Bitmap, dv *DeletionVector, numRecords int64) error {
	if c := bm.GetCardinality(); c != uint64(dv.Cardinality) {
		return corruptf("deletion vector holds %d rows, descriptor says %d", c, dv.Cardinality)
	}
	if bm.GetCardinality() == 0 {
		return nil
	}
	hi := bm.Maximum()
	if dv.MaxRowIndex != nil && hi > uint64(*dv.MaxRowIndex) {
		return corruptf("deletion vector deletes row %d, beyond maxRowIndex %d", hi, *dv.MaxRowIndex)
	}
	if numRecords >= 0 && hi >= uint64(numRecords) {
		return corruptf("deletion vector deletes row %d of a file of %d rows", hi, numRecords)
	}
	return nil
}
