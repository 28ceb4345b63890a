package scan

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// The benchmarks read a generated MNIST-like table: one data file of
// 60,000 rows (id long, label integer, features binary of 784 bytes with
// about 19% non-zero bytes), snappy, written by parquet-go with its
// defaults (one row group, ~256 KiB pages). Each reports rows/s; MB/s
// counts the decoded value bytes (8+4+784 per row). Snappy decoding
// dominates RawPages and ScanFile alike; ScanFile's rest is two
// allocations per row boxing values into []any; ScanFileJSON adds base64
// of the features; ScanProjection (id, label) skips the features' pages.
// Their figures are in bench/RESULTS.md ("Go benchmarks").

const (
	benchRows  = 60000
	benchBytes = benchRows * (8 + 4 + 784)
)

type benchRow struct {
	ID       int64  `parquet:"id"`
	Label    int32  `parquet:"label"`
	Features []byte `parquet:"features"`
}

func benchData(tb testing.TB) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]benchRow, benchRows)
	for i := range rows {
		f := make([]byte, 784)
		for j := range f {
			if rng.IntN(100) < 19 {
				f[j] = byte(1 + rng.IntN(255))
			}
		}
		rows[i] = benchRow{ID: int64(i), Label: int32(rng.IntN(10)), Features: f}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[benchRow](&buf, parquet.Compression(&parquet.Snappy))
	if _, err := w.Write(rows); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// benchTable writes the benchmark table into a temporary directory.
func benchTable(b *testing.B) *snapshot.Snapshot {
	b.Helper()
	data := benchData(b)
	return writeTable(b, filepath.Join(b.TempDir(), "mnist"),
		schemaJSON("id:long", "label:integer", "features:binary"), nil, nil,
		genFile{path: "part-00000.parquet", data: data, numRecords: benchRows})
}

func reportRows(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkScanFile: Scan.File over every column, values as []any.
func BenchmarkScanFile(b *testing.B) {
	snap := benchTable(b)
	sc, err := New(snap, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	for b.Loop() {
		n, sum := 0, 0
		err := sc.File(context.Background(), snap.Files[0], func(_ int64, row []any) error {
			n++
			sum += len(row[2].([]byte))
			return nil
		})
		if err != nil || n != benchRows || sum != benchRows*784 {
			b.Fatalf("%d rows, %d bytes, %v", n, sum, err)
		}
	}
	reportRows(b, benchRows)
}

// BenchmarkScanFileJSON: Scan.File and AppendJSON (what `deltafs cat`
// and tabular samples do).
func BenchmarkScanFileJSON(b *testing.B) {
	snap := benchTable(b)
	sc, err := New(snap, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		err := sc.File(context.Background(), snap.Files[0], func(_ int64, row []any) error {
			buf = sc.AppendJSON(buf[:0], row)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, benchRows)
}

// BenchmarkScanProjection: Scan.File of id and label only.
func BenchmarkScanProjection(b *testing.B) {
	snap := benchTable(b)
	sc, err := New(snap, []string{"id", "label"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchRows * 12)
	for b.Loop() {
		if err := sc.File(context.Background(), snap.Files[0], func(int64, []any) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, benchRows)
}

// BenchmarkRawPages is the baseline: parquet-go's zero-copy page reading
// of the same three columns (typed page data, no per-row values).
func BenchmarkRawPages(b *testing.B) {
	snap := benchTable(b)
	key, _ := snap.FileKey(snap.Files[0].Path)
	st := snap.Table.Storage()
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	for b.Loop() {
		pf, err := parquet.OpenFile(storage.ReaderAt(context.Background(), st, key), snap.Files[0].Size, openOptions()...)
		if err != nil {
			b.Fatal(err)
		}
		n, sum := 0, 0
		for _, rg := range pf.RowGroups() {
			for c, cc := range rg.ColumnChunks() {
				pages := cc.Pages()
				for {
					pg, err := pages.ReadPage()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					data := pg.Data()
					switch c {
					case 0:
						n += len(data.Int64())
					case 2:
						d, offs := data.ByteArray()
						sum += len(d)
						_ = offs
					}
					parquet.Release(pg)
				}
				pages.Close()
			}
		}
		if n != benchRows || sum != benchRows*784 {
			b.Fatalf("%d rows, %d bytes", n, sum)
		}
	}
	reportRows(b, benchRows)
}

// The columnar benchmarks read a generated file of 1M rows (id long,
// label integer, data binary of 16 bytes) in row groups of 100k rows,
// snappy, in one of two layouts:
//
//   - import: what `deltafs import` writes (package writer): required
//     columns, plain encoding, data pages v2 of ~64 KiB;
//   - spark: nullable columns, dictionary-encoded (ids are unique, so
//     the dictionary is as large as the column), data pages v1.
//
// Each reports rows/s; Scan.File on the same file and columns is the
// comparison (figures in bench/RESULTS.md, "Go benchmarks"). FileColumns
// is several times Scan.File in every case: it fills column batches, no
// value boxed. FileColumnsParallel runs a reader per core.
//
// Snappy decoding is the largest cost of every FileColumns case (the
// labels are random, and plain encoding leaves the ids' deltas alone);
// then reading and checking the chunks, and parquet-go's per-page
// decoding. The spark data column has a dictionary as large as the column
// (unique values): each value is copied out of the dictionary page into
// the batch. Allocations are per page and per chunk (about 7 per page of
// the import layout), none per value.
const columnsRows = 1_000_000

func columnsTable(b *testing.B, dir, layout string) *snapshot.Snapshot {
	b.Helper()
	node := func(t parquet.Type) parquet.Node {
		n := parquet.Leaf(t)
		if layout == "spark" {
			return parquet.Optional(parquet.Encoded(n, &parquet.RLEDictionary))
		}
		return parquet.Required(n)
	}
	// Group sorts its fields by name: data, id, label.
	schema := parquet.NewSchema("spark_schema", parquet.Group{
		"id": node(parquet.Int64Type), "label": node(parquet.Int32Type), "data": node(parquet.ByteArrayType),
	})
	def := 0
	opts := []parquet.WriterOption{schema, parquet.Compression(&parquet.Snappy),
		parquet.PageBufferSize(64 << 10), parquet.MaxRowsPerRowGroup(100_000)}
	if layout == "spark" {
		def = 1
		opts = append(opts, parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, opts...)
	rng := rand.New(rand.NewPCG(3, 4))
	rows := make([]parquet.Row, 64) // as package writer hands them over
	for i := 0; i < columnsRows; i += len(rows) {
		for j := range rows {
			data := make([]byte, 16)
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			rows[j] = parquet.Row{
				parquet.ByteArrayValue(data).Level(0, def, 0),
				parquet.Int64Value(int64(i+j)).Level(0, def, 1),
				parquet.Int32Value(int32(rng.IntN(1000))).Level(0, def, 2),
			}
		}
		if _, err := w.WriteRows(rows); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return writeTable(b, filepath.Join(dir, layout), schemaJSON("id:long", "label:integer", "data:binary"), nil, nil,
		genFile{path: "part-00000.parquet", data: buf.Bytes(), numRecords: columnsRows})
}

// BenchmarkFileColumns: FileColumns and Scan.File over the columns id,
// id and label, and data (summing the values' lengths), in both layouts.
func BenchmarkFileColumns(b *testing.B) {
	dir := b.TempDir()
	for _, layout := range []string{"import", "spark"} {
		// Written once, by the first sub-benchmark of the layout that runs.
		var snap *snapshot.Snapshot
		table := func(b *testing.B) *snapshot.Snapshot {
			if snap == nil {
				snap = columnsTable(b, dir, layout)
				b.Logf("%s layout: %d bytes", layout, snap.Files[0].Size)
			}
			return snap
		}
		for _, cols := range [][]string{{"id"}, {"id", "label"}, {"data"}} {
			name := layout + "/" + strings.Join(cols, "+")
			scan := func(b *testing.B) (*Scan, *snapshot.Snapshot) {
				snap := table(b)
				sc, err := New(snap, cols)
				if err != nil {
					b.Fatal(err)
				}
				return sc, snap
			}
			// read reads the file once, summing the ids or the lengths of
			// the data values.
			read := func(b *testing.B, sc *Scan, snap *snapshot.Snapshot) {
				n, sum := 0, int64(0)
				err := sc.FileColumns(b.Context(), snap.Files[0], func(bt *Batch) error {
					n += len(bt.Rows)
					v := &bt.Cols[0]
					if v.Kind == KindBytes {
						for i := range bt.Rows {
							sum += int64(v.Offsets[i+1] - v.Offsets[i])
						}
					} else {
						for _, x := range v.Int {
							sum += x
						}
					}
					return nil
				})
				if err != nil || n != columnsRows || sum != columnsSum(cols[0]) {
					b.Fatalf("%d rows, sum %d: %v", n, sum, err)
				}
			}
			b.Run(name+"/FileColumns", func(b *testing.B) {
				sc, snap := scan(b)
				b.ReportAllocs()
				for b.Loop() {
					read(b, sc, snap)
				}
				reportRows(b, columnsRows)
			})
			// Both cores, each reading the file (what reading the data
			// files of a version in parallel reaches).
			b.Run(name+"/FileColumnsParallel", func(b *testing.B) {
				sc, snap := scan(b)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						read(b, sc, snap)
					}
				})
				reportRows(b, columnsRows)
			})
			b.Run(name+"/ScanFile", func(b *testing.B) {
				sc, snap := scan(b)
				b.ReportAllocs()
				for b.Loop() {
					n, sum := 0, int64(0)
					err := sc.File(b.Context(), snap.Files[0], func(_ int64, row []any) error {
						n++
						switch x := row[0].(type) {
						case []byte:
							sum += int64(len(x))
						case int64:
							sum += x
						}
						return nil
					})
					if err != nil || n != columnsRows || sum != columnsSum(cols[0]) {
						b.Fatalf("%d rows, sum %d: %v", n, sum, err)
					}
				}
				reportRows(b, columnsRows)
			})
		}
	}
}

// columnsSum is the sum of the ids, or of the data values' lengths.
func columnsSum(col string) int64 {
	if col == "data" {
		return 16 * columnsRows
	}
	return columnsRows * (columnsRows - 1) / 2
}
