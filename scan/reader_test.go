package scan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/snapshot"
)

// rgRow is a row of the generated multi-row-group file.
type rgRow struct {
	ID int64   `parquet:"id"`
	S  *string `parquet:"s,optional"`
	L  []int32 `parquet:"l,list"`
}

const rgRows = 2000

// rgFile writes rgRows rows in row groups of 700 and small pages, so
// that reads cross row groups and pages. It returns the file and each
// row's JSON as the scan renders it.
func rgFile(t *testing.T, codec compress.Codec) ([]byte, []string) {
	t.Helper()
	rows := make([]rgRow, rgRows)
	want := make([]string, rgRows)
	for i := range rows {
		r := rgRow{ID: int64(i)}
		s := "null"
		if i%3 != 0 {
			v := fmt.Sprintf("row %d", i)
			r.S, s = &v, `"`+v+`"`
		}
		var l []string
		for j := range i % 4 {
			r.L = append(r.L, int32(i*10+j))
			l = append(l, fmt.Sprint(i*10+j))
		}
		rows[i] = r
		want[i] = fmt.Sprintf(`{"id":%d,"s":%s,"l":[%s]}`, i, s, strings.Join(l, ","))
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[rgRow](&buf, parquet.Compression(codec), parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(512))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

const rgSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"l","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}}]}`

func TestCodecs(t *testing.T) {
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Brotli, &parquet.Zstd, &parquet.Lz4Raw} {
		t.Run(codec.String(), func(t *testing.T) {
			data, want := rgFile(t, codec)
			snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: data, numRecords: -1})
			got := scanJSON(t, snap, nil)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%d rows; first %v, want %v", len(got), got[:min(3, len(got))], want[:3])
			}
		})
	}
}

func TestUnsupportedCodec(t *testing.T) {
	data, _ := rgFile(t, &parquet.Snappy)
	snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: data, numRecords: rgRows})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	// parquet-go cannot decode LZO: pretend the footer says so.
	r.Parquet().Metadata().RowGroups[1].Columns[1].MetaData.Codec = format.LZO
	err = r.ReadRows(t.Context(), snap.Schema.Fields, 0, rgRows, func(int64, []any) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "column s: unsupported compression codec LZO") || !strings.HasPrefix(err.Error(), "version 0: f.parquet: ") {
		t.Errorf("err %v", err)
	}
	// Other columns still read.
	if err := r.ReadRows(t.Context(), snap.Schema.Fields[:1], 0, rgRows, func(int64, []any) error { return nil }); err != nil {
		t.Errorf("column id: %v", err)
	}
}

// ReadRows over ranges starting and ending anywhere (mid page, mid row
// group) gives the same rows as a full scan.
func TestReadRowsRanges(t *testing.T) {
	data, want := rgFile(t, &parquet.Snappy)
	snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: data, numRecords: rgRows})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRows() != rgRows || len(r.Parquet().RowGroups()) != 3 {
		t.Fatalf("%d rows in %d row groups", r.NumRows(), len(r.Parquet().RowGroups()))
	}
	if n, err := FileRowCount(t.Context(), snap, snap.Files[0]); n != rgRows || err != nil {
		t.Errorf("FileRowCount = %d, %v", n, err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ranges := [][2]int64{{0, rgRows}, {0, 1}, {699, 701}, {700, 1400}, {1999, 2000}, {1500, 1500}, {-5, 3}, {1990, 5000}}
	for range 20 {
		a := rng.Int64N(rgRows)
		ranges = append(ranges, [2]int64{a, a + rng.Int64N(rgRows-a+1)})
	}
	for _, rg := range ranges {
		var got []string
		var idx []int64
		err := r.ReadRows(t.Context(), snap.Schema.Fields, rg[0], rg[1], func(i int64, row []any) error {
			idx = append(idx, i)
			got = append(got, string(AppendJSON(nil, snap.Schema.Fields, row)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := max(rg[0], 0), min(rg[1], rgRows)
		if !reflect.DeepEqual(got, want[lo:hi]) && !(len(got) == 0 && lo >= hi) {
			t.Errorf("rows [%d,%d): got %d rows %v..., want %d", rg[0], rg[1], len(got), got[:min(2, len(got))], hi-lo)
		}
		for j, i := range idx {
			if i != lo+int64(j) {
				t.Fatalf("rows [%d,%d): index %d at %d", rg[0], rg[1], i, j)
			}
		}
	}
}

func TestFileReaderPartition(t *testing.T) {
	data, _ := rgFile(t, &parquet.Snappy)
	schema := strings.Replace(rgSchema, `]}`, `,{"name":"p","type":"date","nullable":true,"metadata":{}}]}`, 1)
	schema = schema[:len(schema)-len(`]}`)] + `]}`
	snap := writeTable(t, t.TempDir(), schema, []string{"p"}, nil,
		genFile{path: "p=2024-01-02/f.parquet", data: data, partition: map[string]*string{"p": sp("2024-01-02")}, numRecords: rgRows})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ColumnLeaf(*snap.Schema.Field("p")); err == nil {
		t.Error("ColumnLeaf of a partition column: want an error")
	}
	err = r.ReadRows(t.Context(), []snapshot.StructField{*snap.Schema.Field("p"), *snap.Schema.Field("id")}, 5, 6, func(i int64, row []any) error {
		if got := string(AppendJSON(nil, []snapshot.StructField{*snap.Schema.Field("p"), *snap.Schema.Field("id")}, row)); got != `{"p":"2024-01-02","id":5}` {
			t.Errorf("row %d: %s", i, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// One FileReader and one Scan serve concurrent reads.
func TestConcurrentReads(t *testing.T) {
	data, want := rgFile(t, &parquet.Snappy)
	snap := writeTable(t, t.TempDir(), rgSchema, nil, nil, genFile{path: "f.parquet", data: data, numRecords: rgRows})
	r, err := OpenFile(t.Context(), snap, snap.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := New(snap, nil)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			lo := int64(g * 200)
			var got []string
			var err error
			if g%2 == 0 {
				err = r.ReadRows(t.Context(), snap.Schema.Fields, lo, lo+500, func(_ int64, row []any) error {
					got = append(got, string(AppendJSON(nil, snap.Schema.Fields, row)))
					return nil
				})
				if err == nil && !reflect.DeepEqual(got, want[lo:lo+500]) {
					err = fmt.Errorf("goroutine %d: rows differ", g)
				}
			} else {
				err = sc.File(t.Context(), snap.Files[0], func(_ int64, row []any) error {
					got = append(got, string(sc.AppendJSON(nil, row)))
					return nil
				})
				if err == nil && !reflect.DeepEqual(got, want) {
					err = fmt.Errorf("goroutine %d: rows differ", g)
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
