package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func TestZ85(t *testing.T) {
	// ZeroMQ RFC 32's test vector.
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	enc, err := z85Encode(raw)
	if err != nil || enc != "HelloWorld" {
		t.Fatalf("z85Encode = %q, %v; want HelloWorld", enc, err)
	}
	dec, err := z85Decode("HelloWorld")
	if err != nil || !bytes.Equal(dec, raw) {
		t.Fatalf("z85Decode = %x, %v", dec, err)
	}
	for _, bad := range []string{"Hell", "Hello World", "Hello\x00orld", "#####", "%%%%%"} {
		if _, err := z85Decode(bad); err == nil {
			t.Errorf("z85Decode(%q) succeeded", bad)
		}
	}
	if _, err := z85Decode("%nSc0"); err != nil { // 0xffffffff
		t.Errorf("z85Decode(max group): %v", err)
	}
}

func TestDeletionVectorPaths(t *testing.T) {
	cases := []struct {
		root string
		dv   DeletionVector
		want string
	}{
		// PROTOCOL.md, "JSON Example 1": prefix "ab".
		{"s3://mytable", DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^"}, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"},
		{"/data/t", DeletionVector{StorageType: "u", PathOrInlineDv: "vBn[lx{q8@P<9BNH/isA"}, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"},
		{"s3://mytable", DeletionVector{StorageType: "p", PathOrInlineDv: "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"}, "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"},
		{"/data/t", DeletionVector{StorageType: "p", PathOrInlineDv: "file:///data/t/dv/x.bin"}, "dv/x.bin"},
	}
	for _, c := range cases {
		got, err := deletionVectorKey(c.root, &c.dv)
		if err != nil || got != c.want {
			t.Errorf("deletionVectorKey(%q, %+v) = %q, %v; want %q", c.root, c.dv, got, err, c.want)
		}
	}
	for _, dv := range []DeletionVector{
		{StorageType: "u", PathOrInlineDv: "short"},
		{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k\""},
		{StorageType: "p", PathOrInlineDv: "s3://other/deletion_vector.bin"},
		{StorageType: "i", PathOrInlineDv: "00000"},
	} {
		if k, err := deletionVectorKey("s3://mytable", &dv); err == nil {
			t.Errorf("deletionVectorKey(%+v) = %q, want an error", dv, k)
		}
	}
}

func TestInlineDeletionVector(t *testing.T) {
	// PROTOCOL.md, "JSON Example 3".
	dv := &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	bm, err := decodeInlineDV(dv)
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); !slices.Equal(got, []uint64{3, 4, 7, 11, 18, 29}) {
		t.Fatalf("rows %v", got)
	}
	dv.Cardinality = 5
	if _, err := decodeInlineDV(dv); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cardinality mismatch: %v", err)
	}
}

// encodeDV serialises rows as Delta does: magic, portable roaring64.
func encodeDV(t testing.TB, rows ...uint64) []byte {
	t.Helper()
	bm := roaring64.BitmapOf(rows...)
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint32(dvMagicPortable))
	if _, err := bm.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// frameDV makes a DV file holding one vector at offset 1.
func frameDV(data []byte) []byte {
	out := []byte{dvFileVersion}
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
}

func TestDeletionVectorDecoding(t *testing.T) {
	// Rows in two buckets (above 2^32) and an inline round trip.
	rows := []uint64{0, 5, 1 << 20, 1<<32 + 7}
	data := encodeDV(t, rows...)
	for len(data)%4 != 0 {
		data = append(data, 0) // Delta pads inline data to whole Z85 groups
	}
	enc, _ := z85Encode(data)
	raw := encodeDV(t, rows...)
	bm, err := decodeInlineDV(&DeletionVector{StorageType: "i", PathOrInlineDv: enc, SizeInBytes: int32(len(raw)), Cardinality: 4})
	if err != nil || !slices.Equal(bm.ToArray(), rows) {
		t.Fatalf("inline: %v, %v", bm, err)
	}
	one := int32(1)
	file := frameDV(raw)
	bm, err = decodeDVFile(file, &DeletionVector{StorageType: "u", Offset: &one, SizeInBytes: int32(len(raw)), Cardinality: 4})
	if err != nil || !slices.Equal(bm.ToArray(), rows) {
		t.Fatalf("file: %v, %v", bm, err)
	}

	// The native format: bitmap i holds the rows with high bits i.
	native := binary.BigEndian.AppendUint32(nil, dvMagicNative)
	native = binary.BigEndian.AppendUint32(native, 2)
	for _, low := range [][]uint32{{1, 2}, {9}} {
		b32, _ := roaring.BitmapOf(low...).ToBytes()
		native = binary.BigEndian.AppendUint32(native, uint32(len(b32)))
		native = append(native, b32...)
	}
	bm, err = decodeDVBytes(native)
	if err != nil || !slices.Equal(bm.ToArray(), []uint64{1, 2, 1<<32 + 9}) {
		t.Fatalf("native: %v, %v", bm, err)
	}

	// Empty buckets, as Spark writes them, also the last one.
	withEmpty := binary.LittleEndian.AppendUint32(nil, dvMagicPortable)
	withEmpty = binary.LittleEndian.AppendUint64(withEmpty, 3)
	for key, low := range [][]uint32{{}, {5}, {}} {
		b32, _ := roaring.BitmapOf(low...).ToBytes()
		withEmpty = binary.LittleEndian.AppendUint32(withEmpty, uint32(key))
		withEmpty = append(withEmpty, b32...)
	}
	bm, err = decodeDVBytes(withEmpty)
	if err != nil || !slices.Equal(bm.ToArray(), []uint64{1<<32 + 5}) || bm.Maximum() != 1<<32+5 {
		t.Fatalf("empty buckets: %v, %v", bm, err)
	}
	if err := checkCardinality(bm, &DeletionVector{Cardinality: 1}, 1<<33); err != nil {
		t.Fatal(err)
	}

	bad := map[string][]byte{
		"short":        {1, 2},
		"bad magic":    append([]byte{1, 2, 3, 4}, raw[4:]...),
		"native count": append(binary.BigEndian.AppendUint32(nil, dvMagicNative), 0, 0, 0, 9, 0, 0, 0, 0),
		"native size":  append(binary.BigEndian.AppendUint32(nil, dvMagicNative), 0, 0, 0, 1, 0x7f, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8),
		"native body":  append(binary.BigEndian.AppendUint32(nil, dvMagicNative), 0, 0, 0, 1, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8),
		"no buckets":   raw[:6],
		"too many":     append(append([]byte{}, raw[:4]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"trailing":     append(append([]byte{}, raw...), 0),
		"truncated":    raw[:len(raw)-3],
	}
	// Bucket keys out of order: swap the two buckets' keys.
	swapped := encodeDV(t, 1<<32+1, 2<<32+1)
	k1 := bytes.Index(swapped[12:], []byte{1, 0, 0, 0}) + 12
	k2 := bytes.LastIndex(swapped, []byte{2, 0, 0, 0})
	swapped[k1], swapped[k2] = 2, 1
	bad["unsorted keys"] = swapped
	for what, b := range bad {
		if _, err := decodeDVBytes(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", what, err)
		}
	}

	// Checks against the descriptor and the file's row count.
	max := int64(4)
	if err := checkCardinality(roaring64.BitmapOf(1, 5), &DeletionVector{Cardinality: 2, MaxRowIndex: &max}, -1); err == nil || !strings.Contains(err.Error(), "maxRowIndex") {
		t.Errorf("maxRowIndex: %v", err)
	}
	if err := checkCardinality(roaring64.BitmapOf(1, 5), &DeletionVector{Cardinality: 2}, 5); err == nil {
		t.Error("a row beyond the file's numRecords was accepted")
	}
	if err := checkCardinality(roaring64.BitmapOf(1, 4), &DeletionVector{Cardinality: 2}, 5); err != nil {
		t.Error(err)
	}
}

// Every deletion vector of the shared tables decodes, in files with
// several vectors too, and agrees with its descriptor; the rows deleted
// are below the file's row count.
func TestRealDeletionVectors(t *testing.T) {
	ctx := context.Background()
	seen := map[string]bool{}
	for _, name := range []string{"deltars-table-with-dv-small", "golden-dv-partitioned-with-checkpoint", "deltars-table_with_deletion_logs", "kernelrs-compacted-log-files-table"} {
		tbl := mustOpen(t, openLocal(t, testdataDir+"/"+name))
		vs, err := tbl.Versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, vi := range vs {
			s := mustSnapshot(t, tbl, vi.Version)
			for _, f := range s.Files {
				if f.DeletionVector == nil {
					continue
				}
				bm, err := s.DeletedRows(ctx, f)
				if err != nil {
					t.Fatalf("%s version %d: %v", name, vi.Version, err)
				}
				if bm.GetCardinality() != uint64(f.DeletionVector.Cardinality) || bm.Maximum() >= uint64(f.NumRecords) {
					t.Fatalf("%s: %v for %+v", name, bm, f.DeletionVector)
				}
				bm.Add(1 << 40) // a copy: the cache is not affected
				seen[name+f.DeletionVector.UniqueID()] = true
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("checked %d deletion vectors, want >= 20", len(seen))
	}
}
