package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
)

var allTypes = schemaOf(
	fieldOf("l", "long", false),
	fieldOf("i", "integer", true),
	fieldOf("s", "short", true),
	fieldOf("b", "byte", true),
	fieldOf("str", "string", true),
	fieldOf("bin", "binary", true),
	fieldOf("ok", "boolean", true),
	fieldOf("f", "float", true),
	fieldOf("d", "double", true),
	fieldOf("day", "date", true),
	fieldOf("ts", "timestamp", true),
)

func TestWriteEveryType(t *testing.T) {
	dir := t.TempDir()
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	long := strings.Repeat("z", 40)
	rows := []Row{
		{int64(-5), int32(7), int16(-300), int8(-128), "beta", []byte{1, 2}, true, float32(1.5), 2.25, ts, ts},
		{int64(9), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{42, math.MaxInt32, math.MaxInt16, math.MaxInt8, "alpha", "bytes", false, float32(-3), math.NaN(), time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), ts.Add(time.Hour)},
		{int64(0), int32(0), int16(0), int8(0), long, []byte{}, false, float32(0), 0.0, ts, ts},
	}
	res, err := Write(context.Background(), snaptest.Local(t, dir), allTypes, SliceRows(rows), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 0 || !res.Created || res.Rows != 4 || res.Files != 1 || res.FirstID != -1 {
		t.Fatalf("result %+v", res)
	}

	// Read back through the snapshot package.
	s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	if s.Version != 0 || s.NumRows() != 4 || len(s.Files) != 1 {
		t.Fatalf("snapshot: version %d rows %d files %d", s.Version, s.NumRows(), len(s.Files))
	}
	if !sameSchema(s.Schema, allTypes) || s.Protocol.MinReaderVersion != 1 || s.Protocol.MinWriterVersion != 2 {
		t.Fatalf("schema %s protocol %+v", s.Schema, s.Protocol)
	}
	if s.Schema.Fields[0].Nullable || !s.Schema.Fields[1].Nullable {
		t.Fatalf("nullability lost: %+v", s.Schema.Fields[:2])
	}
	if s.Metadata.ID == "" || s.Metadata.CreatedTime == nil || s.Metadata.Format.Provider != "parquet" {
		t.Fatalf("metadata %+v", s.Metadata)
	}

	// The values themselves.
	got := testkit.ParquetRows(t, filepath.Join(dir, s.Files[0].Path))
	if len(got) != 4 {
		t.Fatalf("%d rows", len(got))
	}
	r0, r1, r2 := got[0], got[1], got[2]
	if r0["l"] != int64(-5) || r0["i"] != int32(7) || r0["s"] != int32(-300) || r0["b"] != int32(-128) ||
		string(r0["str"].([]byte)) != "beta" || !bytes.Equal(r0["bin"].([]byte), []byte{1, 2}) || r0["ok"] != true ||
		r0["f"] != float32(1.5) || r0["d"] != 2.25 {
		t.Errorf("row 0: %v", r0)
	}
	if r0["day"] != int32(19782) { // 2024-02-29
		t.Errorf("date: %v", r0["day"])
	}
	if r0["ts"] != ts.UnixMicro() {
		t.Errorf("timestamp: %v, want %d", r0["ts"], ts.UnixMicro())
	}
	for k, v := range r1 {
		if k != "l" && v != nil {
			t.Errorf("row 1 %s = %v, want null", k, v)
		}
	}
	if r2["l"] != int64(42) || string(r2["bin"].([]byte)) != "bytes" || r2["day"] != int32(-1) {
		t.Errorf("row 2: %v", r2)
	}

	// Parquet types as PROTOCOL.md maps them.
	data, _ := os.ReadFile(filepath.Join(dir, s.Files[0].Path))
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
		lt := ""
		if l := f.Type().LogicalType(); l != nil {
			lt = l.String()
		}
		if want := map[string]string{"s": "INT(16,true)", "b": "INT(8,true)", "day": "DATE", "ts": "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)", "str": "STRING"}[f.Name()]; want != "" && lt != want {
			t.Errorf("%s: logical type %q, want %q", f.Name(), lt, want)
		}
		if f.Name() == "l" && f.Optional() || f.Name() == "i" && !f.Optional() {
			t.Errorf("%s optional=%v", f.Name(), f.Optional())
		}
	}
	if strings.Join(names, ",") != "l,i,s,b,str,bin,ok,f,d,day,ts" {
		t.Errorf("column order %v", names)
	}
	if cc := pf.Metadata().RowGroups[0].Columns; cc[0].MetaData.Codec != format.Snappy {
		t.Errorf("codec %v", cc[0].MetaData.Codec)
	}

	// Statistics.
	var st struct {
		NumRecords int64
		MinValues  map[string]any
		MaxValues  map[string]any
		NullCount  map[string]float64
	}
	if err := json.Unmarshal([]byte(s.Files[0].Stats), &st); err != nil {
		t.Fatal(err)
	}
	want := func(m map[string]any, k string, v any) {
		t.Helper()
		if fmt.Sprint(m[k]) != fmt.Sprint(v) {
			t.Errorf("stats %s = %v, want %v (stats %s)", k, m[k], v, s.Files[0].Stats)
		}
	}
	if st.NumRecords != 4 || st.NullCount["i"] != 1 || st.NullCount["l"] != 0 || st.NullCount["bin"] != 1 {
		t.Errorf("stats %s", s.Files[0].Stats)
	}
	want(st.MinValues, "l", -5)
	want(st.MaxValues, "l", 42)
	want(st.MinValues, "i", 0)
	want(st.MaxValues, "i", float64(math.MaxInt32))
	want(st.MinValues, "str", "alpha")
	want(st.MaxValues, "str", nil) // the 40-character max would be cut: none
	want(st.MinValues, "d", 0)     // NaN ignored
	want(st.MaxValues, "d", 2.25)
	want(st.MinValues, "day", "1969-12-31")
	want(st.MaxValues, "day", "2024-02-29")
	want(st.MinValues, "ts", "2024-02-29T13:14:15.123Z")
	want(st.MaxValues, "ts", "2024-02-29T14:14:15.123Z")
	want(st.MinValues, "bin", nil)
	want(st.MinValues, "ok", nil)
}

func TestStringStatsCut(t *testing.T) {
	dir := t.TempDir()
	sch := schemaOf(fieldOf("s", "string", false))
	long := strings.Repeat("é", 40)
	if _, err := Write(context.Background(), snaptest.Local(t, dir), sch, SliceRows([]Row{{"b"}, {long}}), Options{}); err != nil {
		t.Fatal(err)
	}
	adds := actionsOf(commitActions(t, dir, 0), "add")
	var st struct{ MinValues, MaxValues map[string]string }
	json.Unmarshal([]byte(adds[0]["stats"].(string)), &st)
	if st.MinValues["s"] != "b" {
		t.Errorf("min %q", st.MinValues["s"])
	}
	if _, ok := st.MaxValues["s"]; ok {
		t.Errorf("max of a cut string written: %q", st.MaxValues["s"])
	}
	// min cut to 32 characters.
	dir2 := t.TempDir()
	if _, err := Write(context.Background(), snaptest.Local(t, dir2), sch, SliceRows([]Row{{long}}), Options{}); err != nil {
		t.Fatal(err)
	}
	adds = actionsOf(commitActions(t, dir2, 0), "add")
	json.Unmarshal([]byte(adds[0]["stats"].(string)), &st)
	if st.MinValues["s"] != strings.Repeat("é", 32) {
		t.Errorf("cut min %q", st.MinValues["s"])
	}
}

func TestRowsPerFileAndPages(t *testing.T) {
	dir := t.TempDir()
	sch := schemaOf(fieldOf("id", "long", false), fieldOf("pixels", "binary", false))
	var rows []Row
	for i := range 2500 {
		px := bytes.Repeat([]byte{byte(i)}, 784)
		px[0] = byte(i >> 8)
		rows = append(rows, Row{nil, px})
	}
	res, err := Write(context.Background(), snaptest.Local(t, dir), sch, SliceRows(rows), Options{RowsPerFile: 1000, IDColumn: "id"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 3 || res.Rows != 2500 || res.FirstID != 0 {
		t.Fatalf("result %+v", res)
	}
	s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	var counts []int64
	for _, f := range s.Files {
		counts = append(counts, f.NumRecords)
		if !strings.HasPrefix(f.Path, "part-0000") || !strings.HasSuffix(f.Path, "-c000.snappy.parquet") || !dataFileName.MatchString(f.Path) {
			t.Errorf("data file name %s", f.Path)
		}
	}
	// Every row is there once, pixels intact.
	seen := map[int64]bool{}
	for _, r := range snaptest.LiveRows(t, dir) {
		id := r["id"].(int64)
		px := r["pixels"].([]byte)
		if seen[id] || px[0] != byte(id>>8) || px[1] != byte(id) {
			t.Fatalf("id %d: dup %v or pixels %v", id, seen[id], px[:2])
		}
		seen[id] = true
	}
	if len(seen) != 2500 {
		t.Fatalf("%d ids", len(seen))
	}

	// Pages of the binary column: about 64 KiB of values each, indexed.
	data, _ := os.ReadFile(filepath.Join(dir, s.Files[0].Path))
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	col := pf.Root().Column("pixels").Index()
	cc := pf.RowGroups()[0].ColumnChunks()[col]
	oi, err := cc.OffsetIndex()
	if err != nil || oi.NumPages() < 2 {
		t.Fatalf("offset index: %v pages, %v", oi, err)
	}
	rowsPerPage := oi.FirstRowIndex(1) - oi.FirstRowIndex(0)
	if rowsPerPage < 60 || rowsPerPage > 90 {
		t.Errorf("first page holds %d rows of 784 bytes; want about 64 KiB worth (~80)", rowsPerPage)
	}
	t.Logf("file 0: %d rows, %d pixel pages of %d rows, counts %v", pf.NumRows(), oi.NumPages(), rowsPerPage, counts)
	// No min/max of blobs in the footer.
	if stt := pf.Metadata().RowGroups[0].Columns[col].MetaData.Statistics; len(stt.MaxValue) != 0 || len(stt.Max) != 0 {
		t.Errorf("binary column has footer bounds of %d bytes", len(stt.MaxValue))
	}
}

func TestMaxFileBytes(t *testing.T) {
	dir := t.TempDir()
	sch := schemaOf(fieldOf("blob", "binary", false))
	var rows []Row
	for range 10 {
		rows = append(rows, Row{make([]byte, 1000)})
	}
	res, err := Write(context.Background(), snaptest.Local(t, dir), sch, SliceRows(rows), Options{MaxFileBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 4 { // 3+3+3+1 rows
		t.Fatalf("%d files", res.Files)
	}
}

func TestAppendOverwrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := snaptest.Local(t, dir)
	sch := schemaOf(fieldOf("id", "long", false), fieldOf("v", "string", false))
	batch := func(vals ...string) Rows {
		var rows []Row
		for _, v := range vals {
			rows = append(rows, Row{nil, v})
		}
		return SliceRows(rows)
	}
	r0, err := Write(ctx, st, sch, batch("a", "b"), Options{IDColumn: "id", RowsPerFile: 1})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := Write(ctx, st, sch, batch("c"), Options{IDColumn: "id"})
	if err != nil {
		t.Fatal(err)
	}
	if r0.Version != 0 || r1.Version != 1 || r1.FirstID != 2 || r1.Created {
		t.Fatalf("results %+v %+v", r0, r1)
	}
	before := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	if len(before.Files) != 3 {
		t.Fatalf("%d files before overwrite", len(before.Files))
	}
	r2, err := Write(ctx, st, sch, batch("x", "y"), Options{Mode: ModeOverwrite, IDColumn: "id"})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Version != 2 || r2.Removed != 3 || r2.FirstID != 3 {
		t.Fatalf("overwrite result %+v", r2)
	}
	acts := commitActions(t, dir, 2)
	ci := actionsOf(acts, "commitInfo")[0]
	if ci["operation"] != "WRITE" || ci["operationParameters"].(map[string]any)["mode"] != "Overwrite" ||
		ci["isBlindAppend"] != false || ci["readVersion"] != 1.0 || !strings.HasPrefix(ci["engineInfo"].(string), "deltafs/") {
		t.Errorf("commitInfo %v", ci)
	}
	if _, ok := acts[0]["commitInfo"]; !ok {
		t.Errorf("commitInfo is not the first action")
	}
	removes := actionsOf(acts, "remove")
	if len(removes) != 3 {
		t.Fatalf("%d removes", len(removes))
	}
	sizes := map[string]float64{}
	for _, f := range before.Files {
		sizes[f.Path] = float64(f.Size)
	}
	for _, rm := range removes {
		if rm["dataChange"] != true || rm["deletionTimestamp"] == nil || rm["size"] != sizes[rm["path"].(string)] {
			t.Errorf("remove %v", rm)
		}
		if pv, ok := rm["partitionValues"].(map[string]any); !ok || len(pv) != 0 {
			t.Errorf("remove partitionValues %v", rm["partitionValues"])
		}
	}
	after := snaptest.LiveRows(t, dir)
	if len(after) != 2 || string(after[0]["v"].([]byte))+string(after[1]["v"].([]byte)) != "xy" && string(after[0]["v"].([]byte))+string(after[1]["v"].([]byte)) != "yx" {
		t.Fatalf("after overwrite: %v", after)
	}
	// The first commit is a CREATE TABLE, later appends blind only without
	// an id column.
	if ci0 := actionsOf(commitActions(t, dir, 0), "commitInfo")[0]; ci0["operation"] != "CREATE TABLE" || ci0["readVersion"] != nil {
		t.Errorf("create commitInfo %v", ci0)
	}
	r3, err := Write(ctx, st, sch, SliceRows([]Row{{int64(100), "z"}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ci := actionsOf(commitActions(t, dir, r3.Version), "commitInfo")[0]; ci["isBlindAppend"] != true {
		t.Errorf("append commitInfo %v", ci)
	}
	// Ids continue from the max, also one a caller supplied.
	r4, err := Write(ctx, st, sch, batch("w"), Options{IDColumn: "id"})
	if err != nil || r4.FirstID != 101 {
		t.Fatalf("append after explicit id: %+v %v", r4, err)
	}
	// An empty write commits a version with no files.
	r5, err := Write(ctx, st, sch, batch(), Options{})
	if err != nil || r5.Files != 0 || r5.Version != 5 {
		t.Fatalf("empty write: %+v %v", r5, err)
	}
}

func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	sch := schemaOf(fieldOf("id", "long", false))
	t.Run("not a table, not empty", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
		_, err := Write(ctx, snaptest.Local(t, dir), sch, SliceRows(nil), Options{})
		if err == nil || !strings.Contains(err.Error(), "is not a Delta table and is not empty") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("leftovers of a failed write are fine", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, newDataFileKey(0)), []byte("x"), 0o644)
		os.Mkdir(filepath.Join(dir, "_delta_log"), 0o755)
		if _, err := Write(ctx, snaptest.Local(t, dir), sch, SliceRows(nil), Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		os.WriteFile(p, []byte("x"), 0o644)
		if _, err := Write(ctx, snaptest.Local(t, p), sch, SliceRows(nil), Options{}); err == nil {
			t.Fatal("no error")
		}
	})
	dir := t.TempDir()
	if _, err := Write(ctx, snaptest.Local(t, dir), sch, SliceRows([]Row{{int64(1)}}), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		schema *snapshot.StructType
		rows   []Row
		opts   Options
		want   string
	}{
		{"schema mismatch", schemaOf(fieldOf("id", "integer", false)), nil, Options{}, "schema mismatch"},
		{"extra field", schemaOf(fieldOf("id", "long", false), fieldOf("x", "long", true)), nil, Options{}, "schema mismatch"},
		{"null in a non-null column", schemaOf(fieldOf("id", "long", true)), []Row{{nil}}, Options{}, "not nullable"},
		{"wrong Go type", sch, []Row{{"one"}}, Options{}, `cannot write a Go string`},
		{"short row", sch, []Row{{}}, Options{}, "row has 0 values"},
		{"bad mode", sch, nil, Options{Mode: "upsert"}, "unknown write mode"},
		{"id column not long", schemaOf(fieldOf("id", "long", false)), nil, Options{IDColumn: "nope"}, "must be a long field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Write(ctx, snaptest.Local(t, dir), c.schema, SliceRows(c.rows), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	if s := snaptest.Version(t, snaptest.OpenDir(t, dir), -1); s.Version != 0 {
		t.Fatalf("a failed write committed version %d", s.Version)
	}
	t.Run("out of range", func(t *testing.T) {
		d := t.TempDir()
		for _, c := range []struct {
			typ string
			v   any
		}{{"byte", 128}, {"short", int32(40000)}, {"integer", int64(1) << 40}, {"long", uint64(math.MaxUint64)}} {
			_, err := Write(ctx, snaptest.Local(t, d), schemaOf(fieldOf("x", c.typ, false)), SliceRows([]Row{{c.v}}), Options{})
			if err == nil || !strings.Contains(err.Error(), "out of range") {
				t.Errorf("%s %v: err %v", c.typ, c.v, err)
			}
		}
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		_, err := Write(ctx, snaptest.Local(t, t.TempDir()), schemaOf(fieldOf("s", "string", false)), SliceRows([]Row{{"\xff"}}), Options{})
		if err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unsupported type", func(t *testing.T) {
		_, err := Write(ctx, snaptest.Local(t, t.TempDir()), schemaOf(fieldOf("d", "decimal(10,2)", false)), SliceRows(nil), Options{})
		if err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Fatalf("err %v", err)
		}
	})
}
