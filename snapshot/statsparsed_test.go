package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// The stats_parsed of every type the filter bounds, rendered as the JSON
// statistics a writer would have written.

const spSchema = `{"type":"struct","fields":[` +
	`{"name":"l","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"i","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"d","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"f","type":"float","nullable":true,"metadata":{}},` +
	`{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"b","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"dt","type":"date","nullable":true,"metadata":{}},` +
	`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"tsms","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"ts96","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
	`{"name":"bin","type":"binary","nullable":true,"metadata":{}},` +
	`{"name":"part","type":"string","nullable":true,"metadata":{}}]}`

type spAllVals struct {
	L    *int64            `parquet:"l,optional"`
	I    *int32            `parquet:"i,optional"`
	D    *float64          `parquet:"d,optional"`
	F    *float32          `parquet:"f,optional"`
	Dec  *int64            `parquet:"dec,optional,decimal(2:10)"`
	S    *string           `parquet:"s,optional"`
	B    *bool             `parquet:"b,optional"`
	Dt   *int32            `parquet:"dt,optional,date"`
	Ts   *int64            `parquet:"ts,optional,timestamp(microsecond:utc)"`
	Tsms *int64            `parquet:"tsms,optional,timestamp(millisecond:utc)"`
	Ts96 *deprecated.Int96 `parquet:"ts96,optional"`
	Ntz  *int64            `parquet:"ntz,optional,timestamp(microsecond:local)"`
	Bin  []byte            `parquet:"bin,optional"`
}

type spAllCounts struct {
	L *int64 `parquet:"l,optional"`
	S *int64 `parquet:"s,optional"`
}

type spAll struct {
	NumRecords *int64       `parquet:"numRecords,optional"`
	MinValues  *spAllVals   `parquet:"minValues,optional"`
	MaxValues  *spAllVals   `parquet:"maxValues,optional"`
	NullCount  *spAllCounts `parquet:"nullCount,optional"`
}

type spTestAdd[S any] struct {
	Path            string            `parquet:"path,optional"`
	PartitionValues map[string]string `parquet:"partitionValues,optional"`
	Size            int64             `parquet:"size,optional"`
	Stats           *string           `parquet:"stats,optional"`
	StatsParsed     *S                `parquet:"stats_parsed,optional"`
}

type spTestRow[S any] struct {
	Protocol *ckptProtocol `parquet:"protocol,optional"`
	MetaData *ckptMetadata `parquet:"metaData,optional"`
	Add      *spTestAdd[S] `parquet:"add,optional"`
}

func ptr[T any](v T) *T { return &v }

// statsOf writes a checkpoint at version 1 of the adds (schema spSchema)
// and returns the Stats the snapshot gives each, by path.
func statsOf[S any](t *testing.T, schema string, adds ...*spTestAdd[S]) map[string]*AddFile {
	t.Helper()
	f := newFakeLog(t)
	f.create(nil)
	rows := []spTestRow[S]{
		{Protocol: &ckptProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &ckptMetadata{ID: "x", Format: ckptFormat{Provider: "parquet"}, SchemaString: schema, PartitionColumns: []string{"part"}}},
	}
	for _, a := range adds {
		a.PartitionValues = map[string]string{"part": "p"}
		a.Size = 10
		rows = append(rows, spTestRow[S]{Add: a})
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[spTestRow[S]](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.st.Set(logDir+"00000000000000000001.checkpoint.parquet", buf.Bytes(), f.at(1))
	snap, err := mustOpen(t, f.st).Snapshot(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*AddFile{}
	for _, a := range snap.Files {
		out[a.Path] = a
	}
	return out
}

func TestStatsParsedRendersEveryType(t *testing.T) {
	ts := time.Date(2024, 3, 9, 12, 12, 14, 424242000, time.UTC)
	day := int32(time.Date(2024, 3, 9, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	var i96 deprecated.Int96
	nanos := uint64(12*3600+12*60+14)*1e9 + 424242000
	i96[0], i96[1], i96[2] = uint32(nanos), uint32(nanos>>32), uint32(int64(day)+2440588)
	min := &spAllVals{L: ptr[int64](-9007199254740993), I: ptr[int32](7), D: ptr(0.1), F: ptr[float32](0.1), Dec: ptr[int64](-5),
		S: ptr("a\"é<"), B: ptr(false), Dt: ptr(day), Ts: ptr(ts.UnixMicro()), Tsms: ptr(ts.UnixMilli()), Ts96: &i96, Ntz: ptr(ts.UnixMicro()), Bin: []byte{1}}
	max := &spAllVals{L: ptr[int64](math.MaxInt64), D: ptr(math.NaN()), F: ptr(float32(math.Inf(1))), Dec: ptr[int64](123456), S: ptr("z\xff"), B: ptr(true)}
	got := statsOf(t, spSchema,
		&spTestAdd[spAll]{Path: "all", StatsParsed: &spAll{NumRecords: ptr[int64](3), MinValues: min, MaxValues: max, NullCount: &spAllCounts{L: ptr[int64](0), S: ptr[int64](2)}}},
		&spTestAdd[spAll]{Path: "json", Stats: ptr(`{"numRecords":9}`), StatsParsed: &spAll{NumRecords: ptr[int64](3), MinValues: min}},
		&spTestAdd[spAll]{Path: "empty", StatsParsed: &spAll{MinValues: &spAllVals{}}},
		&spTestAdd[spAll]{Path: "none"},
	)
	want := `{"numRecords":3,` +
		`"minValues":{"l":-9007199254740993,"i":7,"d":0.1,"f":0.10000000149011612,"dec":-0.05,"s":"a\"é\u003c","b":false,"dt":"2024-03-09",` +
		`"ts":"2024-03-09T12:12:14.424242Z","tsms":"2024-03-09T12:12:14.424Z","ts96":"2024-03-09T12:12:14.424242Z","ntz":"2024-03-09T12:12:14.424242"},` +
		// NaN, infinity and invalid UTF-8 are left out; binary never rendered.
		`"maxValues":{"l":9223372036854775807,"dec":1234.56,"b":true},` +
		`"nullCount":{"l":0,"s":2}}`
	if s := got["all"].Stats; s != want {
		t.Errorf("rendered\n%s\nwant\n%s", s, want)
	}
	if !json.Valid([]byte(got["all"].Stats)) {
		t.Errorf("not JSON: %s", got["all"].Stats)
	}
	if got["all"].NumRecords != 3 {
		t.Errorf("numRecords %d", got["all"].NumRecords)
	}
	// The JSON string wins when both are there.
	if s := got["json"].Stats; s != `{"numRecords":9}` || got["json"].NumRecords != 9 {
		t.Errorf("with a stats string: %q, %d rows", s, got["json"].NumRecords)
	}
	for _, p := range []string{"empty", "none"} {
		if got[p].Stats != "" || got[p].NumRecords != -1 {
			t.Errorf("%s: %q, %d rows", p, got[p].Stats, got[p].NumRecords)
		}
	}
}

// A stats_parsed whose types disagree with the schema gives no
// statistics at all (numRecords stays): never a bound read as another type.
func TestStatsParsedWrongTypes(t *testing.T) {
	type strVals struct {
		L *string `parquet:"l,optional"` // long in the schema
	}
	type decVals struct {
		Dec *int64 `parquet:"dec,optional,decimal(3:10)"` // scale 2 in the schema
	}
	type dateAsString struct {
		S *int32 `parquet:"s,optional,date"` // string in the schema
	}
	type unknownCol struct {
		Zz *int64 `parquet:"zz,optional"`
	}
	type ntzAsTs struct {
		Ts *int64 `parquet:"ts,optional,timestamp(microsecond:local)"` // timestamp in the schema
	}
	type wrap[V any] struct {
		NumRecords *int64 `parquet:"numRecords,optional"`
		MinValues  *V     `parquet:"minValues,optional"`
	}
	check := func(name string, got map[string]*AddFile) {
		t.Helper()
		if a := got["f"]; a.Stats != "" || a.NumRecords != 4 {
			t.Errorf("%s: stats %q, %d rows; want none, 4", name, a.Stats, a.NumRecords)
		}
	}
	check("string for long", statsOf(t, spSchema, &spTestAdd[wrap[strVals]]{Path: "f", StatsParsed: &wrap[strVals]{NumRecords: ptr[int64](4), MinValues: &strVals{L: ptr("5")}}}))
	check("decimal scale", statsOf(t, spSchema, &spTestAdd[wrap[decVals]]{Path: "f", StatsParsed: &wrap[decVals]{NumRecords: ptr[int64](4), MinValues: &decVals{Dec: ptr[int64](5)}}}))
	check("date for string", statsOf(t, spSchema, &spTestAdd[wrap[dateAsString]]{Path: "f", StatsParsed: &wrap[dateAsString]{NumRecords: ptr[int64](4), MinValues: &dateAsString{S: ptr[int32](1)}}}))
	check("unknown column", statsOf(t, spSchema, &spTestAdd[wrap[unknownCol]]{Path: "f", StatsParsed: &wrap[unknownCol]{NumRecords: ptr[int64](4), MinValues: &unknownCol{Zz: ptr[int64](1)}}}))
	check("ntz for timestamp", statsOf(t, spSchema, &spTestAdd[wrap[ntzAsTs]]{Path: "f", StatsParsed: &wrap[ntzAsTs]{NumRecords: ptr[int64](4), MinValues: &ntzAsTs{Ts: ptr[int64](1)}}}))

	// numRecords of a non-integer type is no row count.
	type strNum struct {
		NumRecords *string `parquet:"numRecords,optional"`
	}
	if a := statsOf(t, spSchema, &spTestAdd[strNum]{Path: "f", StatsParsed: &strNum{NumRecords: ptr("12")}})["f"]; a.Stats != "" || a.NumRecords != -1 {
		t.Errorf("string numRecords: %q, %d rows", a.Stats, a.NumRecords)
	}
}

// Real checkpoints that carry both (delta-rs writes stats and
// stats_parsed): every value rendered from stats_parsed equals the JSON
// string's.
func TestStatsParsedMatchesJSONInRealCheckpoints(t *testing.T) {
	compared := 0
	for _, c := range []struct{ table, ckpt string }{
		{"deltars-table_with_deletion_logs", "00000000000000000010.checkpoint.parquet"},
		{"deltars-table_with_deletion_logs", "00000000000000000020.checkpoint.parquet"},
		{"deltars-table_failed_last_checkpoint_update", "00000000000000000001.checkpoint.parquet"},
		{"deltars-table_failed_last_checkpoint_update", "00000000000000000003.checkpoint.parquet"},
	} {
		st := openLocal(t, filepath.Join("..", "testdata", "delta", c.table))
		pf, err := openParquet(context.Background(), st, "_delta_log/"+c.ckpt, -1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readParquetCheckpoint(pf)
		if err != nil {
			t.Fatal(err)
		}
		schema, err := ParseSchema(p.metadata.SchemaString)
		if err != nil {
			t.Fatal(err)
		}
		for i, rg := range pf.rowGroups() {
			g := &groupReader{p: pf, rg: rg, idx: i}
			stats, _ := g.column("add", "stats")
			sp, layout := readStatsParsed(g)
			if sp == nil || !checkParsedStats(layout, schema) {
				t.Fatalf("%s: stats_parsed missing or its layout refused: %+v", c.ckpt, layout)
			}
			for r := range int(rg.NumRows()) {
				js, ok := stats.value(r)
				if !ok || js.s == "" {
					continue
				}
				rendered := sp.render(r)
				if rendered == "" {
					t.Errorf("%s row %d: nothing rendered beside %s", c.ckpt, r, js.s)
					continue
				}
				compareStats(t, c.ckpt, rendered, js.s)
				compared++
			}
		}
	}
	t.Logf("%d adds compared", compared)
	if compared < 4 {
		t.Fatalf("compared %d adds", compared)
	}
}

// compareStats checks every value of rendered against the JSON's.
func compareStats(t *testing.T, name, rendered, js string) {
	t.Helper()
	var a, b map[string]any
	dec := func(s string, m *map[string]any) {
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		if err := d.Decode(m); err != nil {
			t.Fatalf("%s: %v: %s", name, err, s)
		}
	}
	dec(rendered, &a)
	dec(js, &b)
	if a["numRecords"] != b["numRecords"] {
		t.Errorf("%s: numRecords %v, JSON %v", name, a["numRecords"], b["numRecords"])
	}
	n := 0
	for _, sec := range []string{"minValues", "maxValues", "nullCount"} {
		ra, _ := a[sec].(map[string]any)
		rb, _ := b[sec].(map[string]any)
		for k, va := range ra {
			vb, ok := rb[k]
			if !ok {
				t.Errorf("%s: %s.%s rendered (%v), not in the JSON %s", name, sec, k, va, js)
				continue
			}
			n++
			switch x := va.(type) {
			case json.Number:
				ya, _ := new(big.Rat).SetString(x.String())
				yb, ok := new(big.Rat).SetString(string(vb.(json.Number)))
				if !ok || ya.Cmp(yb) != 0 {
					t.Errorf("%s: %s.%s = %v, JSON %v", name, sec, k, va, vb)
				}
			default:
				if va != vb {
					t.Errorf("%s: %s.%s = %v, JSON %v", name, sec, k, va, vb)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no value compared: %s / %s", name, rendered, js)
	}
}

// A file whose commit has JSON statistics and whose checkpoint has only
// stats_parsed is one shared AddFile (per-file work is memoised by
// pointer), whichever is read first.
func TestStatsParsedSharesWithCommit(t *testing.T) {
	f := newFakeLog(t)
	f.create(nil)
	f.commit(1, Action{Add: &AddFile{Path: "f", PartitionValues: map[string]*string{"part": ptr("p")}, Size: 10,
		Stats: `{"numRecords":4,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}`}})
	f.commit(2)
	type vals struct {
		ID *int64 `parquet:"id,optional"`
	}
	type sp struct {
		NumRecords *int64 `parquet:"numRecords,optional"`
		MinValues  *vals  `parquet:"minValues,optional"`
		MaxValues  *vals  `parquet:"maxValues,optional"`
	}
	rows := []spTestRow[sp]{
		{Protocol: &ckptProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &ckptMetadata{ID: f.metadata.ID, Format: ckptFormat{Provider: "parquet"}, SchemaString: f.metadata.SchemaString, PartitionColumns: f.metadata.PartitionColumns}},
		{Add: &spTestAdd[sp]{Path: "f", PartitionValues: map[string]string{"part": "p"}, Size: 10,
			StatsParsed: &sp{NumRecords: ptr[int64](4), MinValues: &vals{ID: ptr[int64](1)}, MaxValues: &vals{ID: ptr[int64](9)}}}},
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[spTestRow[sp]](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.st.Set(logDir+"00000000000000000002.checkpoint.parquet", buf.Bytes(), f.at(2))
	tbl := mustOpen(t, f.st)
	s2, err := tbl.Snapshot(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Files) != 1 || !s2.Files[0].statsRendered {
		t.Fatalf("version 2 was not read from its checkpoint's stats_parsed: %+v", s2.Files)
	}
	s1, err := tbl.Snapshot(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1.Files) != 1 || s1.Files[0] != s2.Files[0] {
		t.Errorf("the commit's add and the checkpoint's are not shared")
	}
}
