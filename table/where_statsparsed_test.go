package table

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
)

// A checkpoint whose add actions carry their statistics only as
// stats_parsed (Delta's writeStatsAsJson=false, writeStatsAsStruct=true)
// skips exactly as the JSON statistics do.

type spVals struct {
	ID    *int64   `parquet:"id,optional"`
	Label *int32   `parquet:"label,optional"`
	Score *float64 `parquet:"score,optional"`
	Lang  *string  `parquet:"lang,optional"`
}

type spCounts struct {
	ID     *int64 `parquet:"id,optional"`
	Label  *int64 `parquet:"label,optional"`
	Score  *int64 `parquet:"score,optional"`
	Lang   *int64 `parquet:"lang,optional"`
	Pixels *int64 `parquet:"pixels,optional"`
}

type spStats struct {
	NumRecords *int64    `parquet:"numRecords,optional"`
	MinValues  *spVals   `parquet:"minValues,optional"`
	MaxValues  *spVals   `parquet:"maxValues,optional"`
	NullCount  *spCounts `parquet:"nullCount,optional"`
}

// spWrongVals is a hostile layout: id's bounds as strings, though the
// schema says long.
type spWrongVals struct {
	ID *string `parquet:"id,optional"`
}

type spWrongStats struct {
	NumRecords *int64       `parquet:"numRecords,optional"`
	MinValues  *spWrongVals `parquet:"minValues,optional"`
	MaxValues  *spWrongVals `parquet:"maxValues,optional"`
}

type spAdd[S any] struct {
	Path             string            `parquet:"path,optional"`
	PartitionValues  map[string]string `parquet:"partitionValues,optional"`
	Size             int64             `parquet:"size,optional"`
	ModificationTime int64             `parquet:"modificationTime,optional"`
	DataChange       bool              `parquet:"dataChange,optional"`
	StatsParsed      *S                `parquet:"stats_parsed,optional"`
}

type spProtocol struct {
	MinReaderVersion int32 `parquet:"minReaderVersion,optional"`
	MinWriterVersion int32 `parquet:"minWriterVersion,optional"`
}

type spFormat struct {
	Provider string `parquet:"provider,optional"`
}

type spMetadata struct {
	ID               string            `parquet:"id,optional"`
	Format           spFormat          `parquet:"format,optional"`
	SchemaString     string            `parquet:"schemaString,optional"`
	PartitionColumns []string          `parquet:"partitionColumns,optional,list"`
	Configuration    map[string]string `parquet:"configuration,optional"`
	CreatedTime      int64             `parquet:"createdTime,optional"`
}

type spRow[S any] struct {
	Protocol *spProtocol `parquet:"protocol,optional"`
	MetaData *spMetadata `parquet:"metaData,optional"`
	Add      *spAdd[S]   `parquet:"add,optional"`
}

// jsonAdd is an add action of the commit, with its JSON statistics.
type jsonAdd struct {
	Path            string            `json:"path"`
	PartitionValues map[string]string `json:"partitionValues"`
	Size            int64             `json:"size"`
	Stats           string            `json:"stats"`
}

type jsonStats struct {
	NumRecords int64    `json:"numRecords"`
	MinValues  spVals   `json:"minValues"`
	MaxValues  spVals   `json:"maxValues"`
	NullCount  spCounts `json:"nullCount"`
}

// commitAdds reads the add actions of the table's one commit.
func commitAdds(t *testing.T, dir string) []jsonAdd {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var adds []jsonAdd
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Add *jsonAdd `json:"add"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Add != nil {
			adds = append(adds, *line.Add)
		}
	}
	if len(adds) != whereParts*whereFiles {
		t.Fatalf("%d adds in the commit", len(adds))
	}
	return adds
}

// writeStatsParsedCheckpoint replaces dir's log by a checkpoint at
// version 0 whose adds carry stats(a) as stats_parsed and no JSON
// statistics.
func writeStatsParsedCheckpoint[S any](t *testing.T, dir string, stats func(jsonStats) *S) {
	t.Helper()
	rows := []spRow[S]{
		{Protocol: &spProtocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &spMetadata{ID: "9b0c6d1e-0000-4000-8000-00000000f17e", Format: spFormat{Provider: "parquet"},
			SchemaString: testkit.PartitionedSchema, PartitionColumns: []string{"split"}, Configuration: map[string]string{}, CreatedTime: 1700000000000}},
	}
	for _, a := range commitAdds(t, dir) {
		var st jsonStats
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, spRow[S]{Add: &spAdd[S]{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size,
			ModificationTime: 1700000000000, DataChange: true, StatsParsed: stats(st)}})
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[spRow[S]](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.checkpoint.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only the checkpoint is left: no JSON statistics anywhere.
	if err := os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000000.json")); err != nil {
		t.Fatal(err)
	}
}

func typedStats(st jsonStats) *spStats {
	return &spStats{NumRecords: &st.NumRecords, MinValues: &st.MinValues, MaxValues: &st.MaxValues, NullCount: &st.NullCount}
}

// TestWhereSkipsByStatsParsed: with the statistics only in stats_parsed,
// a filter they exclude for every file opens no data file, and one they
// exclude for some opens only the others (the same files the JSON
// statistics leave: TestWhereSkipsByStats).
func TestWhereSkipsByStatsParsed(t *testing.T) {
	dir := writeSplitTable(t, -1)
	writeStatsParsedCheckpoint(t, dir, typedStats)
	for _, where := range []string{"id > 1000000", "id < 0", "label > 9", "score < -1 OR lang IN ('xx', 'zz')", "NOT (id IS NOT NULL)", "lang = 'it'"} {
		tb, ts := openWhere(t, dir, sample.Spec{Where: whereExpr(where), Shards: 3}, "")
		ids, _ := readAll(t, tb)
		if len(ids) != 0 || len(ts.keys()) != 0 {
			t.Errorf("--where %q: %d samples, data files touched %v; want none", where, len(ids), ts.keys())
		}
	}
	tb, ts := openWhere(t, dir, sample.Spec{Where: whereExpr("id < 500"), Shards: 2}, "")
	checkIDBelow500(t, tb, ts)
	// No filter: every row, every file.
	tb, ts = openWhere(t, dir, sample.Spec{Shards: 2}, "")
	if ids, _ := readAll(t, tb); len(ids) != whereParts*whereFiles*whereRows {
		t.Errorf("no filter: %d samples", len(ids))
	}
}

// TestWhereStatsParsedHostile: stats_parsed that is of the wrong type,
// null or missing skips nothing: every file is opened and the rows that
// match are served, never fewer.
func TestWhereStatsParsedHostile(t *testing.T) {
	all := whereParts * whereFiles
	cases := []struct {
		name  string
		write func(dir string)
	}{
		{"id bounds as strings", func(dir string) {
			writeStatsParsedCheckpoint(t, dir, func(st jsonStats) *spWrongStats {
				lo, hi := "-5", "-5" // read as numbers, would exclude every file from id >= 3950
				return &spWrongStats{NumRecords: &st.NumRecords, MinValues: &spWrongVals{ID: &lo}, MaxValues: &spWrongVals{ID: &hi}}
			})
		}},
		{"null statistics", func(dir string) {
			writeStatsParsedCheckpoint(t, dir, func(st jsonStats) *spStats {
				return &spStats{NumRecords: &st.NumRecords, MinValues: &spVals{}, MaxValues: &spVals{}, NullCount: &spCounts{}}
			})
		}},
		{"no stats_parsed", func(dir string) {
			writeStatsParsedCheckpoint(t, dir, func(jsonStats) *spStats { return nil })
		}},
		{"numRecords only", func(dir string) {
			writeStatsParsedCheckpoint(t, dir, func(st jsonStats) *spStats { return &spStats{NumRecords: &st.NumRecords} })
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeSplitTable(t, -1)
			c.write(dir)
			for _, where := range []string{"id > 1000000", "id IS NULL"} {
				tb, ts := openWhere(t, dir, sample.Spec{Where: whereExpr(where), Shards: 2}, "")
				ids, _ := readAll(t, tb)
				if len(ids) != 0 || len(ts.keys()) != all {
					t.Errorf("--where %q: %d samples, %d data files touched; want 0 samples from all %d files", where, len(ids), len(ts.keys()), all)
				}
			}
			tb, ts := openWhere(t, dir, sample.Spec{Where: whereExpr("id >= 3950"), Shards: 2}, "")
			ids, _ := readAll(t, tb)
			if len(ids) != 50 || len(ts.keys()) != all {
				t.Errorf("id >= 3950: %d samples, %d files touched; want 50 from all %d", len(ids), len(ts.keys()), all)
			}
		})
	}
}
