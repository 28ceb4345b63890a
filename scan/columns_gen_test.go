package scan

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/pqcheck/pqtest"
	"github.com/deltafs/deltafs/snapshot"
)

// genColumn is a column of the generated encoding tables: its Delta type,
// its Parquet node, and its values at each row (with their levels).
type genColumn struct {
	name, delta string
	node        func(enc encoding.Encoding) parquet.Node
	enc         map[string]encoding.Encoding // by mode
	value       func(i int) parquet.Value    // non-null value of row i
	required    bool
	levels      func(i int) []parquet.Value // nested columns: all values of row i
}

// optionalLeaf is an optional leaf of type typ, encoded with enc.
func optionalLeaf(n parquet.Node) func(encoding.Encoding) parquet.Node {
	return func(enc encoding.Encoding) parquet.Node {
		if enc != nil {
			n = parquet.Encoded(n, enc)
		}
		return parquet.Optional(n)
	}
}

var (
	dictEnc  = map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary}
	deltaInt = map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary, "delta-v2": &parquet.DeltaBinaryPacked}
)

func genColumns() []genColumn {
	bs := func(i, n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		return b
	}
	return []genColumn{
		{name: "l", delta: "long", node: optionalLeaf(parquet.Leaf(parquet.Int64Type)), enc: deltaInt, value: func(i int) parquet.Value {
			switch i % 1000 {
			case 1:
				return parquet.Int64Value(math.MaxInt64)
			case 2:
				return parquet.Int64Value(math.MinInt64)
			}
			return parquet.Int64Value(int64(i*7919%1000) - 500)
		}},
		{name: "i", delta: "integer", node: optionalLeaf(parquet.Leaf(parquet.Int32Type)), enc: deltaInt, value: func(i int) parquet.Value {
			if i%1000 == 3 {
				return parquet.Int32Value(math.MinInt32)
			}
			return parquet.Int32Value(int32(i%300 - 150))
		}},
		{name: "s", delta: "short", node: optionalLeaf(parquet.Int(16)), enc: deltaInt, value: func(i int) parquet.Value {
			return parquet.Int32Value(int32(i*13%65536 - 32768))
		}},
		{name: "b", delta: "byte", node: optionalLeaf(parquet.Int(8)), enc: deltaInt, value: func(i int) parquet.Value {
			return parquet.Int32Value(int32(i%256 - 128))
		}},
		{name: "u", delta: "long", node: optionalLeaf(parquet.Uint(32)), enc: deltaInt, value: func(i int) parquet.Value {
			return parquet.Int32Value(int32(uint32(i%500) * 2654435761))
		}},
		{name: "f", delta: "float", node: optionalLeaf(parquet.Leaf(parquet.FloatType)),
			enc: map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary, "delta-v2": &parquet.ByteStreamSplit},
			value: func(i int) parquet.Value {
				switch i % 100 {
				case 5:
					return parquet.FloatValue(float32(math.NaN()))
				case 6:
					return parquet.FloatValue(float32(math.Copysign(0, -1)))
				case 7:
					return parquet.FloatValue(float32(math.Inf(1)))
				}
				return parquet.FloatValue(float32(i%200) / 3)
			}},
		{name: "d", delta: "double", node: optionalLeaf(parquet.Leaf(parquet.DoubleType)),
			enc: map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary, "delta-v2": &parquet.ByteStreamSplit},
			value: func(i int) parquet.Value {
				if i%100 == 8 {
					return parquet.DoubleValue(math.NaN())
				}
				return parquet.DoubleValue(float64(i%50) * 1.5)
			}},
		{name: "w", delta: "double", node: optionalLeaf(parquet.Leaf(parquet.Int32Type)), enc: deltaInt, value: func(i int) parquet.Value {
			return parquet.Int32Value(int32(i%1000 - 500))
		}},
		{name: "str", delta: "string", node: optionalLeaf(parquet.String()),
			enc: map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary, "delta-v2": &parquet.DeltaLengthByteArray},
			value: func(i int) parquet.Value {
				if i%50 == 1 {
					return parquet.ByteArrayValue([]byte{})
				}
				return parquet.ByteArrayValue(fmt.Appendf(nil, "s%d-é", i%97))
			}},
		{name: "bin", delta: "binary", node: optionalLeaf(parquet.Leaf(parquet.ByteArrayType)),
			enc:   map[string]encoding.Encoding{"dict": &parquet.RLEDictionary, "dict-v2": &parquet.RLEDictionary, "delta-v2": &parquet.DeltaByteArray},
			value: func(i int) parquet.Value { return parquet.ByteArrayValue(bs(i%40, i%40%20)) }},
		{name: "fl", delta: "binary", node: optionalLeaf(parquet.Leaf(parquet.FixedLenByteArrayType(4))), enc: dictEnc,
			value: func(i int) parquet.Value { return parquet.FixedLenByteArrayValue(bs(i%30, 4)) }},
		{name: "bo", delta: "boolean", node: optionalLeaf(parquet.Leaf(parquet.BooleanType)),
			value: func(i int) parquet.Value { return parquet.BooleanValue(i%3 == 1) }},
		{name: "dec", delta: "decimal(9,2)", node: optionalLeaf(parquet.Decimal(2, 9, parquet.Int32Type)), enc: deltaInt,
			value: func(i int) parquet.Value { return parquet.Int32Value(int32(i*101 - 9999)) }},
		{name: "dt", delta: "date", node: optionalLeaf(parquet.Date()), enc: deltaInt,
			value: func(i int) parquet.Value { return parquet.Int32Value(int32(i%400 + 18000)) }},
		{name: "ts", delta: "timestamp", node: optionalLeaf(parquet.Timestamp(parquet.Microsecond)), enc: deltaInt,
			value: func(i int) parquet.Value { return parquet.Int64Value(int64(i) * 1_000_003_007) }},
		{name: "req", delta: "long", required: true, enc: deltaInt,
			node: func(enc encoding.Encoding) parquet.Node {
				n := parquet.Leaf(parquet.Int64Type)
				if enc != nil {
					n = parquet.Encoded(n, enc)
				}
				return parquet.Required(n)
			},
			value: func(i int) parquet.Value { return parquet.Int64Value(int64(i)) }},
		{name: "lst", delta: `{"type":"array","elementType":"binary","containsNull":true}`,
			node: func(encoding.Encoding) parquet.Node {
				return parquet.Optional(parquet.List(parquet.Optional(parquet.Leaf(parquet.ByteArrayType))))
			},
			levels: func(i int) []parquet.Value {
				switch i % 11 {
				case 0:
					return []parquet.Value{parquet.Value{}.Level(0, 0, 0)}
				case 1:
					return []parquet.Value{parquet.Value{}.Level(0, 1, 0)}
				}
				var vs []parquet.Value
				for k := range i%4 + 1 {
					rep := min(k, 1)
					if i%5 == 2 && k == 1 {
						vs = append(vs, parquet.Value{}.Level(rep, 2, 0))
						continue
					}
					vs = append(vs, parquet.ByteArrayValue(bs(i+k, 3+k)).Level(rep, 3, 0))
				}
				return vs
			}},
	}
}

// genEncodedTable writes a table of one data file of rows rows in row
// groups of 1,500 and small pages (so that columns' pages end at different
// rows), encoded as mode says, with a deletion vector deleting dels.
func genEncodedTable(t *testing.T, mode string, rows int, dels []uint64) (*snapshot.Snapshot, []genColumn) {
	cols := genColumns()
	group := parquet.Group{}
	var fields []string
	for _, c := range cols {
		group[c.name] = c.node(c.enc[mode])
		fields = append(fields, c.name+":"+c.delta)
	}
	schema := parquet.NewSchema("x", group)
	leaf := make([]int, len(cols))
	for j, c := range cols {
		path := []string{c.name}
		if c.levels != nil {
			path = append(path, "list", "element")
		}
		l, ok := schema.Lookup(path...)
		if !ok {
			t.Fatalf("no leaf %v", path)
		}
		leaf[j] = l.ColumnIndex
	}
	var prows []parquet.Row
	for i := range rows {
		byLeaf := make([][]parquet.Value, len(cols))
		for j, c := range cols {
			var vs []parquet.Value
			switch {
			case c.levels != nil:
				vs = c.levels(i)
			case c.required:
				vs = []parquet.Value{c.value(i).Level(0, 0, 0)}
			case (i+j)%7 == 0 || i >= 1000 && i < 1300:
				vs = []parquet.Value{parquet.Value{}.Level(0, 0, 0)}
			default:
				vs = []parquet.Value{c.value(i).Level(0, 1, 0)}
			}
			for k := range vs {
				vs[k] = vs[k].Level(vs[k].RepetitionLevel(), vs[k].DefinitionLevel(), leaf[j])
			}
			byLeaf[leaf[j]] = vs
		}
		prows = append(prows, slices.Concat(byLeaf...))
	}
	opts := []parquet.WriterOption{schema, parquet.MaxRowsPerRowGroup(1500), parquet.PageBufferSize(1024)}
	switch mode {
	case "plain":
		opts = append(opts, parquet.DataPageVersion(1))
	case "dict-v2", "delta-v2":
		opts = append(opts, parquet.DataPageVersion(2), parquet.Compression(&parquet.Zstd))
	default:
		opts = append(opts, parquet.DataPageVersion(1), parquet.Compression(&parquet.Snappy))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, opts...)
	// Written a few rows at a time: parquet-go cuts pages between writes.
	for len(prows) > 0 {
		n := min(len(prows), 10)
		if _, err := w.WriteRows(prows[:n]); err != nil {
			t.Fatal(err)
		}
		prows = prows[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gf := genFile{path: "part-0.parquet", data: buf.Bytes(), numRecords: int64(rows)}
	if len(dels) > 0 {
		bm := roaring64.BitmapOf(dels...)
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, uint32(1681511377))
		if _, err := bm.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		inline := b.Bytes()
		padded := append(slices.Clone(inline), make([]byte, (4-len(inline)%4)%4)...)
		gf.dv = map[string]any{"storageType": "i", "pathOrInlineDv": z85(t, padded), "sizeInBytes": len(inline), "cardinality": len(dels)}
	}
	snap := writeTable(t, filepath.Join(t.TempDir(), "t"), schemaJSON(fields...), nil, nil, gf)
	return snap, cols
}

// Every typed column, encoded plain, with a dictionary (data pages v1 and
// v2) and with the delta and byte-stream-split encodings, nullable (all
// null for pages on end), beside a nested column whose rows cross pages,
// under a deletion vector: FileColumns gives what Scan.File gives, each
// column alone and all together.
func TestFileColumnsEncodings(t *testing.T) {
	var dels []uint64
	for i := uint64(0); i < 600; i += 3 {
		dels = append(dels, i)
	}
	for i := uint64(2000); i < 2200; i++ {
		dels = append(dels, i)
	}
	dels = append(dels, 1499, 1500, 4999)
	for _, mode := range []string{"plain", "dict", "dict-v2", "delta-v2"} {
		t.Run(mode, func(t *testing.T) {
			snap, cols := genEncodedTable(t, mode, 5000, dels)
			var tally columnsTally
			f := snap.Files[0]
			compareFileColumns(t, snap, nil, f, &tally)
			for _, c := range cols {
				compareFileColumns(t, snap, []string{c.name}, f, &tally)
			}
			if tally.rows != (len(cols)+1)*(5000-len(dels)) || tally.nulls == 0 {
				t.Errorf("tally %+v", tally)
			}
			for k := KindAny; k <= KindBool; k++ {
				if tally.values[k] == 0 {
					t.Errorf("no value of kind %s", k)
				}
			}
		})
	}
}

// A page of more than BatchRows rows is read in batches of BatchRows.
func TestFileColumnsBatchRows(t *testing.T) {
	const rows = 3*BatchRows + 1000
	schema := parquet.NewSchema("x", parquet.Group{"n": parquet.Required(parquet.Leaf(parquet.Int64Type))})
	prows := make([]parquet.Row, rows)
	for i := range prows {
		prows[i] = parquet.Row{parquet.Int64Value(int64(i)*3).Level(0, 0, 0)}
	}
	data := writeParquet(t, schema, prows, parquet.PageBufferSize(16<<20))
	snap := writeTable(t, filepath.Join(t.TempDir(), "t"), schemaJSON("n:long"), nil, nil,
		genFile{path: "a.parquet", data: data, numRecords: rows})
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	next := int64(0)
	err = sc.FileColumns(t.Context(), snap.Files[0], func(b *Batch) error {
		sizes = append(sizes, len(b.Rows))
		for i, r := range b.Rows {
			if r != next || b.Cols[0].Int[i] != 3*r || b.Cols[0].Nulls != nil {
				t.Fatalf("row %d (want %d): %d", r, next, b.Cols[0].Int[i])
			}
			next++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int{BatchRows, BatchRows, BatchRows, 1000}) {
		t.Errorf("batch sizes %v", sizes)
	}
}

// A dictionary of large values referenced by many rows: a batch copies at
// most 64 MiB of them (one value more at most), never what the indexes
// would expand to at once.
func TestFileColumnsDictionaryExpansion(t *testing.T) {
	const rows, size = 300, 1 << 20
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%3)}, size) }
	schema := parquet.NewSchema("x", parquet.Group{"v": parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.RLEDictionary))})
	prows := make([]parquet.Row, rows)
	for i := range prows {
		prows[i] = parquet.Row{parquet.ByteArrayValue(val(i)).Level(0, 1, 0)}
	}
	data := writeParquet(t, schema, prows, parquet.Compression(&parquet.Snappy))
	if len(data) > 8*size {
		t.Fatalf("the file is %d bytes: not dictionary-encoded", len(data))
	}
	snap := writeTable(t, filepath.Join(t.TempDir(), "t"), schemaJSON("v:binary"), nil, nil,
		genFile{path: "a.parquet", data: data, numRecords: rows})
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, batches := 0, 0
	err = sc.FileColumns(t.Context(), snap.Files[0], func(b *Batch) error {
		batches++
		v := &b.Cols[0]
		if len(v.Data) > maxBatchBytes {
			t.Fatalf("a batch of %d rows holds %d bytes", len(b.Rows), len(v.Data))
		}
		for i, r := range b.Rows {
			if r != int64(n) || !bytes.Equal(v.Bytes(i), val(n)) {
				t.Fatalf("row %d (want %d): %d bytes", r, n, len(v.Bytes(i)))
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != rows || batches < rows*size/maxBatchBytes {
		t.Errorf("%d rows in %d batches", n, batches)
	}
}

// No columns: the batches carry the live rows' indexes, as Scan.File
// visits them.
func TestFileColumnsNoColumns(t *testing.T) {
	snap, _ := genEncodedTable(t, "dict", 5000, []uint64{0, 1, 2, 1499, 1500, 3000, 4999})
	sc, err := New(snap, []string{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	err = sc.FileColumns(t.Context(), snap.Files[0], func(b *Batch) error {
		if len(b.Cols) != 0 {
			t.Fatalf("%d vectors", len(b.Cols))
		}
		got = append(got, b.Rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4993 || got[0] != 3 || got[len(got)-1] != 4998 || slices.Contains(got, 1500) {
		t.Errorf("%d rows, %v..%v", len(got), got[:3], got[len(got)-3:])
	}
}

// The callback's error is returned as it is; cancelling the context stops
// the read with an error naming the file; a panic in the callback is not
// taken for a malformed file.
func TestFileColumnsCallback(t *testing.T) {
	snap, _ := genEncodedTable(t, "dict", 5000, nil)
	sc, err := New(snap, []string{"l", "str"})
	if err != nil {
		t.Fatal(err)
	}
	f := snap.Files[0]
	stop := errors.New("stop")
	calls := 0
	if err := sc.FileColumns(t.Context(), f, func(*Batch) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("error %v after %d calls, want stop after 1", err, calls)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls = 0
	err = sc.FileColumns(ctx, f, func(*Batch) error { calls++; cancel(); return nil })
	var fe *FileError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &fe) || fe.Path != f.Path || calls != 1 {
		t.Errorf("after cancel: %v (%d calls)", err, calls)
	}

	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the callback's panic", p)
			}
		}()
		sc.FileColumns(t.Context(), f, func(*Batch) error { panic("boom") })
		t.Error("no panic")
	}()
}

// A file whose rows disagree with the log's count, and a vacuumed file,
// fail as in Scan.File.
func TestFileColumnsFileErrors(t *testing.T) {
	snap, _ := genEncodedTable(t, "plain", 100, nil)
	f := *snap.Files[0]
	f.NumRecords = 99
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	nop := func(*Batch) error { return nil }
	err = sc.FileColumns(t.Context(), &f, nop)
	werr := sc.File(t.Context(), &f, func(int64, []any) error { return nil })
	if err == nil || werr == nil || err.Error() != werr.Error() || !strings.Contains(err.Error(), "statistics in the log say 99") {
		t.Errorf("row count: %v; Scan.File: %v", err, werr)
	}
	f.NumRecords = 100
	f.Path = "gone.parquet"
	err = sc.FileColumns(t.Context(), &f, nop)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != "gone.parquet" || !strings.Contains(err.Error(), "missing from storage") {
		t.Errorf("vacuumed: %v", err)
	}
}

// A dictionary index past the end of its dictionary (a damaged page whose
// checksum was recomputed) fails the file with an error naming the column,
// where Scan.File fails too; never a panic, never a value.
func TestFileColumnsDictionaryIndexOutOfRange(t *testing.T) {
	schema := parquet.NewSchema("x", parquet.Group{"n": parquet.Required(parquet.Encoded(parquet.Leaf(parquet.Int64Type), &parquet.RLEDictionary))})
	var prows []parquet.Row
	for i := range 64 {
		prows = append(prows, parquet.Row{parquet.Int64Value(int64(i%3)*10).Level(0, 0, 0)})
	}
	data := damageDictionaryIndex(t, writeParquet(t, schema, prows, parquet.DataPageVersion(1)))
	snap := writeTable(t, filepath.Join(t.TempDir(), "t"), schemaJSON("n:long"), nil, nil,
		genFile{path: "a.parquet", data: data, numRecords: 64})
	sc, err := New(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	werr := sc.File(t.Context(), snap.Files[0], func(int64, []any) error { return nil })
	gerr := sc.FileColumns(t.Context(), snap.Files[0], func(b *Batch) error {
		t.Errorf("a batch of %d rows from a damaged page", len(b.Rows))
		return nil
	})
	var fe *FileError
	if werr == nil || !errors.As(gerr, &fe) || fe.Path != "a.parquet" || !strings.Contains(gerr.Error(), "column n: dictionary index 3 out of range (the dictionary has 3 values)") {
		t.Errorf("Scan.File: %v; FileColumns: %v", werr, gerr)
	}
	t.Logf("Scan.File: %v\nFileColumns: %v", werr, gerr)
}

// damageDictionaryIndex sets the first indexes of the data page of the
// only column of an uncompressed file (a dictionary of 3 values: indexes
// of 2 bits, bit-packed) to 3, and recomputes the page's checksum.
func damageDictionaryIndex(t *testing.T, data []byte) []byte {
	t.Helper()
	f, err := pqtest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Page(0, "n", 0)
	// The RLE/bit-packed hybrid: a bit width byte, then runs; the first
	// is bit-packed (a header varint with its low bit set) for these
	// cycling indexes.
	if p.Header.Type != format.DataPage || p.Body[0] != 2 || p.Body[1]&1 != 1 {
		t.Fatalf("page %v, body % x: not the expected layout", p.Header.Type, p.Body[:4])
	}
	p.Body[2] = 0xff // four indexes of 3
	p.Header.CRC = int32(crc32.ChecksumIEEE(p.Body))
	return f.Bytes()
}

// A nested column whose rows hold large values (lists of a dictionary's
// 1 MiB value): a batch ends after the row that brings its values past
// 64 MiB, never holding what the whole page of rows expands to; the
// deleted rows after a cut stay deleted, the other columns stay aligned.
func TestFileColumnsNestedBudget(t *testing.T) {
	const rows, elems, size = 120, 8, 1 << 20
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%2)}, size) }
	schema := parquet.NewSchema("x", parquet.Group{
		"id":  parquet.Required(parquet.Leaf(parquet.Int64Type)),
		"lst": parquet.Optional(parquet.List(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.RLEDictionary))),
	})
	prows := make([]parquet.Row, rows)
	for i := range prows {
		r := parquet.Row{parquet.Int64Value(int64(i)).Level(0, 0, 0)}
		for k := range elems {
			r = append(r, parquet.ByteArrayValue(val(i+k)).Level(min(k, 1), 2, 1))
		}
		prows[i] = r
	}
	data := writeParquet(t, schema, prows, parquet.Compression(&parquet.Snappy))
	if len(data) > 8*size {
		t.Fatalf("the file is %d bytes: not dictionary-encoded", len(data))
	}
	var dels []uint64
	for i := uint64(0); i < rows; i += 5 {
		dels = append(dels, i, i+1)
	}
	dv := roaring64.BitmapOf(dels...)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(1681511377))
	if _, err := dv.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	inline := b.Bytes()
	padded := append(slices.Clone(inline), make([]byte, (4-len(inline)%4)%4)...)
	snap := writeTable(t, filepath.Join(t.TempDir(), "t"),
		schemaJSON("id:long", `lst:{"type":"array","elementType":"binary","containsNull":false}`), nil, nil,
		genFile{path: "a.parquet", data: data, numRecords: rows, dv: map[string]any{
			"storageType": "i", "pathOrInlineDv": z85(t, padded), "sizeInBytes": len(inline), "cardinality": len(dels)}})
	sc, err := New(snap, []string{"lst", "id"})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	batches := 0
	err = sc.FileColumns(t.Context(), snap.Files[0], func(bt *Batch) error {
		batches++
		held := 0
		for i, r := range bt.Rows {
			if bt.Cols[1].Int[i] != r {
				t.Fatalf("row %d: id %d", r, bt.Cols[1].Int[i])
			}
			l, _ := bt.Cols[0].Any[i].([]any)
			if len(l) != elems {
				t.Fatalf("row %d: %d elements", r, len(l))
			}
			for k, e := range l {
				if !bytes.Equal(e.([]byte), val(int(r)+k)) {
					t.Fatalf("row %d element %d differs", r, k)
				}
				held += len(e.([]byte))
			}
			got = append(got, r)
		}
		if held > maxBatchBytes+elems*size {
			t.Fatalf("a batch of %d rows holds %d bytes", len(bt.Rows), held)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range int64(rows) {
		if !dv.Contains(uint64(i)) {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) || batches < len(want)*elems*size/maxBatchBytes {
		t.Errorf("rows %v in %d batches, want %v", got, batches, want)
	}
}

// One Scan reads files concurrently, as an index built in parallel over a
// version's data files does: each goroutine gets the rows and values of
// a sequential read.
func TestFileColumnsConcurrent(t *testing.T) {
	var snaps []*snapshot.Snapshot
	for _, mode := range []string{"plain", "dict", "delta-v2"} {
		snap, _ := genEncodedTable(t, mode, 3000, []uint64{5, 6, 7, 1600})
		snaps = append(snaps, snap)
	}
	render := func(snap *snapshot.Snapshot) (string, error) {
		sc, err := New(snap, []string{"l", "str", "lst", "dt"})
		if err != nil {
			return "", err
		}
		var out strings.Builder
		err = sc.FileColumns(t.Context(), snap.Files[0], func(b *Batch) error {
			for i, r := range b.Rows {
				row := make([]any, len(b.Cols))
				for j := range b.Cols {
					row[j] = b.Cols[j].Value(i)
				}
				fmt.Fprintf(&out, "%d %s\n", r, sc.AppendJSON(nil, row))
			}
			return nil
		})
		return out.String(), err
	}
	var want []string
	for _, snap := range snaps {
		s, err := render(snap)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	errs := make(chan error, 12)
	for g := range 12 {
		go func() {
			got, err := render(snaps[g%3])
			if err == nil && got != want[g%3] {
				err = fmt.Errorf("goroutine %d: rows differ", g)
			}
			errs <- err
		}()
	}
	for range 12 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
