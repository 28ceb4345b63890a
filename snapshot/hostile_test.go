package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit"
)

// Hostile metadata: no allocation or loop is sized by a number the log or
// a file claims without checking it against what is there. Each case
// fails cleanly, naming the file, and allocates little.

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// rewriteLog replaces old with new in a log file of dir (which must
// contain it).
func rewriteLog(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := logFilePath(dir, name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q", name, old)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(data, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A deletion vector descriptor claiming 2 GiB (or an offset past the end
// of its file) fails naming the file, without a buffer of that size.
func TestHostileDeletionVectorSizes(t *testing.T) {
	const dvFile = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
	cases := map[string]struct{ old, new, want string }{
		"size":   {`"sizeInBytes":36`, `"sizeInBytes":2147483647`, "the log claims 2147483656 bytes at offset 0 of a 45-byte file"},
		"offset": {`"offset":1,`, `"offset":2147483000,`, "shorter than the log says"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := testkit.CopyTable(t, "deltars-table-with-dv-small")
			rewriteLog(t, dir, "00000000000000000001.json", c.old, c.new)
			tbl := mustOpen(t, openLocal(t, dir))
			s := mustSnapshot(t, tbl, 1)
			var err error
			if a := allocated(func() { _, err = s.DeletedRows(context.Background(), s.Files[0]) }); a > 16<<20 {
				t.Errorf("allocated %d MiB", a>>20)
			}
			wantErr(t, err, nil, dir+" version 1: "+dvFile+": deletion vector of ", c.want)
		})
	}
}

// Row counts whose sum overflows an int64 are refused, not wrapped into
// a negative (or small) total.
func TestHostileRowCountsOverflow(t *testing.T) {
	f := newFakeLog(t)
	f.create(nil)
	big := func(path string) Action {
		a := addAction(path, 1)
		a.Add.Stats = fmt.Sprintf(`{"numRecords":%d}`, int64(math.MaxInt64/2+1))
		return a
	}
	f.commit(1, big("f1"))
	f.commit(2, big("f2"))
	ctx := context.Background()
	tbl, err := Open(ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	if n := mustSnapshot(t, tbl, 1).NumRows(); n != math.MaxInt64/2+1 {
		t.Fatalf("version 1: %d rows", n)
	}
	_, err = tbl.Snapshot(ctx, 2)
	wantErr(t, err, ErrCorrupt, "mem://table version 2: live row counts overflow")
	err = tbl.History(ctx, nil, func(VersionStats) error { return nil })
	wantErr(t, err, ErrCorrupt, "mem://table version 2: f2: live row counts overflow")
}

// A checkpoint whose stats_parsed gives fewer rows than its deletion
// vector deletes is corrupt (the JSON stats path checked this already).
func TestHostileStatsParsedBelowCardinality(t *testing.T) {
	type parsed struct {
		NumRecords int64 `parquet:"numRecords,optional"`
	}
	type add struct {
		Path            string            `parquet:"path,optional"`
		PartitionValues map[string]string `parquet:"partitionValues,optional"`
		Size            int64             `parquet:"size,optional"`
		DeletionVector  *ckptDV           `parquet:"deletionVector,optional"`
		StatsParsed     *parsed           `parquet:"stats_parsed,optional"`
	}
	type row struct {
		Protocol *ckptProtocol `parquet:"protocol,optional"`
		MetaData *ckptMetadata `parquet:"metaData,optional"`
		Add      *add          `parquet:"add,optional"`
	}
	f := newFakeLog(t)
	f.create(nil)
	rows := []row{
		{Protocol: &ckptProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &ckptMetadata{ID: "x", Format: ckptFormat{Provider: "parquet"}, SchemaString: fakeSchema, PartitionColumns: []string{"part"}}},
		{Add: &add{Path: "f1", PartitionValues: map[string]string{"part": "p1"}, Size: 10,
			DeletionVector: &ckptDV{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 5},
			StatsParsed:    &parsed{NumRecords: 3}}},
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.st.Set(logDir+"00000000000000000001.checkpoint.parquet", buf.Bytes(), f.at(1))
	_, err := mustOpen(t, f.st).Snapshot(context.Background(), 1)
	wantErr(t, err, ErrCorrupt, "mem://table version 1: _delta_log/00000000000000000001.checkpoint.parquet: row 2: add f1: deletion vector removes 5 rows of a file of 3")
}

// A sidecar action's size is checked against the sidecar object, and a
// hostile one sizes nothing.
func TestHostileSidecarSize(t *testing.T) {
	const ckpt = "00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json"
	const side = "_delta_log/_sidecars/00000000000000000006.checkpoint.0000000001.0000000002.19af1366-a425-47f4-8fa6-8d6865625573.parquet"
	for _, claim := range []string{"12277", "4611686018427387904"} {
		dir := testkit.CopyTable(t, "kernelrs-v2-checkpoints-json-with-sidecars")
		rewriteLog(t, dir, ckpt, `"sizeInBytes":12276`, `"sizeInBytes":`+claim)
		tbl := mustOpen(t, openLocal(t, dir))
		var err error
		if a := allocated(func() { _, err = tbl.Snapshot(context.Background(), 6) }); a > 64<<20 {
			t.Errorf("claim %s: allocated %d MiB", claim, a>>20)
		}
		wantErr(t, err, ErrCorrupt, dir+" version 6: "+side+": sidecar is 12276 bytes, _delta_log/"+ckpt+" says "+claim)
		checkReadable(t, tbl, "kernelrs-v2-checkpoints-json-with-sidecars", 5)
	}
}

// footerBomb is a Parquet file of a few bytes whose footer claims a list
// of 2^30 schema elements: parquet-go would allocate it whole (the Go
// runtime then dies of "out of memory", which no recover catches).
func footerBomb() []byte {
	var footer []byte
	footer = append(footer, 0x15, 0x02) // field 1 (version): i32 1
	footer = append(footer, 0x19, 0xfc) // field 2 (schema): list of structs, long size
	footer = binary.AppendUvarint(footer, 1<<30)
	footer = append(footer, 0x00)
	data := []byte("PAR1")
	data = append(data, footer...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(footer)))
	return append(data, "PAR1"...)
}

func TestHostileParquetFooter(t *testing.T) {
	const ckpt = "00000000000000000002.checkpoint.parquet"
	dir := testkit.CopyTable(t, "dat-with_checkpoint")
	if err := os.WriteFile(logFilePath(dir, ckpt), footerBomb(), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := mustOpen(t, openLocal(t, dir))
	var err error
	if a := allocated(func() { _, err = tbl.Snapshot(context.Background(), 2) }); a > 16<<20 {
		t.Errorf("allocated %d MiB", a>>20)
	}
	wantErr(t, err, ErrCorrupt, dir+" version 2: _delta_log/"+ckpt+": Parquet footer: Schema: a list claims 1073741824 elements in ")
	checkReadable(t, tbl, "dat-with_checkpoint", 0, 1)
	// Every real checkpoint and sidecar passes the check.
	for _, name := range []string{"dat-with_checkpoint", "golden-multi-part-checkpoint", "golden-v2-checkpoint-parquet", "deltars-table_failed_last_checkpoint_update"} {
		checkReadable(t, mustOpen(t, openLocal(t, testkit.CopyTable(t, name))), name, loadExpected(t)[name].versionList()...)
	}
}

// A _last_checkpoint too large to be a hint is not read at all.
func TestHostileLastCheckpointSize(t *testing.T) {
	f := newFakeLog(t)
	f.simple(3)
	f.st.Set(lastCheckpointKey, []byte(`{"version":2}`+strings.Repeat(" ", maxHintBytes)), f.at(3))
	tbl := mustOpen(t, f.st)
	checkSimple(t, tbl, 3)
	if n := f.st.Reads(lastCheckpointKey); n != 0 {
		t.Errorf("_last_checkpoint read %d times", n)
	}
}

// rewritePage returns a copy of the Parquet file data whose first page of
// the leaf column named path has its header changed by edit (after its
// bytes are changed by editData, when given), with the offsets after it
// and the footer fixed, so that only the claim is hostile.
func rewritePage(t *testing.T, data []byte, path string, edit func(*format.PageHeader), editData func([]byte) []byte) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	body := data[:len(data)-8-flen]
	var md format.FileMetaData
	if err := thrift.Unmarshal(&proto, data[len(data)-8-flen:len(data)-8], &md); err != nil {
		t.Fatal(err)
	}
	var cm *format.ColumnMetaData
	for i := range md.RowGroups[0].Columns {
		if c := &md.RowGroups[0].Columns[i].MetaData; strings.Join(c.PathInSchema, ".") == path {
			cm = c
		}
	}
	if cm == nil {
		t.Fatalf("no column %s", path)
	}
	off := cm.DataPageOffset
	if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < off {
		off = cm.DictionaryPageOffset
	}
	r := proto.NewReaderFromBytes(body[off:])
	var h format.PageHeader
	if err := thrift.NewDecoder(r).Decode(&h); err != nil {
		t.Fatal(err)
	}
	dataStart := off + int64(r.BytesRead())
	end := dataStart + int64(h.CompressedPageSize)
	page := bytes.Clone(body[dataStart:end])
	if editData != nil {
		page = editData(page)
		h.CompressedPageSize = int32(len(page))
	}
	edit(&h)
	header, err := thrift.Marshal(&proto, &h)
	if err != nil {
		t.Fatal(err)
	}
	delta := int64(len(header)+len(page)) - (end - off)
	out := append(append(append(bytes.Clone(body[:off]), header...), page...), body[end:]...)
	for i := range md.RowGroups[0].Columns {
		c := &md.RowGroups[0].Columns[i].MetaData
		if c == cm {
			c.TotalCompressedSize += delta
			continue
		}
		if c.DataPageOffset > off {
			c.DataPageOffset += delta
		}
		if c.DictionaryPageOffset > off {
			c.DictionaryPageOffset += delta
		}
	}
	footer, err := thrift.Marshal(&proto, &md)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// A page that claims 2 GiB (compressed, uncompressed, or in its snappy
// stream) in a checkpoint of a few KiB fails naming the checkpoint, and
// allocates nothing of the kind; the page rewritten without a hostile
// claim still reads (the rewriting itself is sound).
func TestHostileParquetPages(t *testing.T) {
	const ckpt = "00000000000000000002.checkpoint.parquet"
	orig, err := os.ReadFile(filepath.Join(testdataDir, "dat-with_checkpoint", "_delta_log", ckpt))
	if err != nil {
		t.Fatal(err)
	}
	same := func(*format.PageHeader) {}
	cases := map[string]struct {
		data []byte
		want string // "" when it must read
	}{
		"rewritten as it was": {rewritePage(t, orig, "add.path", same, nil), ""},
		"compressed size": {rewritePage(t, orig, "add.path", func(h *format.PageHeader) { h.CompressedPageSize = math.MaxInt32 }, nil),
			"a page claims 2147483647 bytes, "},
		"uncompressed size": {rewritePage(t, orig, "add.path", func(h *format.PageHeader) { h.UncompressedPageSize = math.MaxInt32 }, nil),
			"claims 2147483647 uncompressed"},
		"snappy length": {rewritePage(t, orig, "add.path", same, func(p []byte) []byte {
			_, k := binary.Uvarint(p)
			return append(binary.AppendUvarint(nil, math.MaxUint32), p[k:]...)
		}), "a snappy page claims 4294967295 bytes"},
		"values": {rewritePage(t, orig, "add.path", func(h *format.PageHeader) {
			if h.DataPageHeader.Valid {
				h.DataPageHeader.V.NumValues = math.MaxInt32
			} else {
				h.DictionaryPageHeader.V.NumValues = math.MaxInt32
			}
		}, nil), "a page claims 2147483647 values"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := testkit.CopyTable(t, "dat-with_checkpoint")
			if err := os.WriteFile(logFilePath(dir, ckpt), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			tbl := mustOpen(t, openLocal(t, dir))
			var err error
			if a := allocated(func() { _, err = tbl.Snapshot(context.Background(), 2) }); a > 64<<20 {
				t.Errorf("allocated %d MiB", a>>20)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkReadable(t, tbl, "dat-with_checkpoint", 2, 3)
				return
			}
			wantErr(t, err, ErrCorrupt, dir+" version 2: _delta_log/"+ckpt+": column add.path: ", c.want)
		})
	}
}
