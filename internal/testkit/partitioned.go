package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// SplitRow is a row of a partitioned table's data files (the partition
// column, split, is in the log only, as Delta writes it).
type SplitRow struct {
	ID     int64   `parquet:"id"`
	Label  int32   `parquet:"label"`
	Score  float64 `parquet:"score"`
	Lang   string  `parquet:"lang"`
	Pixels []byte  `parquet:"pixels"`
}

// PartitionedSchema is the schema of WritePartitioned's tables.
const PartitionedSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"split","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"label","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"score","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"lang","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"pixels","type":"binary","nullable":true,"metadata":{}}]}`

// Partitioned describes a table WritePartitioned writes: Partitions
// partitions of split = "p0", "p1", ..., each FilesPer data files of
// RowsPer rows with SampleBytes-byte pixels. Labels are 0..9 by row,
// scores in [0, 1), lang "en", "de" or "fr". Data files carry statistics
// (numRecords, min, max and null counts of id, label, score and lang).
// Only, when not negative, writes only partition Only's add actions: the
// same data files, byte for byte, as the whole table's.
type Partitioned struct {
	Partitions, FilesPer, RowsPer, SampleBytes int
	Only                                       int
}

// PartitionFile is the data file name of file k of partition p.
func PartitionFile(p, k int) string {
	return fmt.Sprintf("split=p%d/part-%05d.snappy.parquet", p, k)
}

// WritePartitioned writes the table at dir (one commit), deterministic:
// every call writes the same bytes.
func WritePartitioned(dir string, o Partitioned) error {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return err
	}
	const ts = 1700000000000
	lines := []any{
		map[string]any{"commitInfo": map[string]any{"timestamp": ts, "operation": "WRITE", "engineInfo": "testkit"}},
		map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}},
		map[string]any{"metaData": map[string]any{"id": "9b0c6d1e-0000-4000-8000-00000000f17e", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
			"schemaString": PartitionedSchema, "partitionColumns": []string{"split"}, "configuration": map[string]any{}, "createdTime": ts}},
	}
	langs := []string{"en", "de", "fr"}
	id := int64(0)
	for p := range o.Partitions {
		for k := range o.FilesPer {
			rng := rand.New(rand.NewPCG(uint64(p), uint64(k)))
			rows := make([]SplitRow, o.RowsPer)
			for i := range rows {
				px := make([]byte, o.SampleBytes)
				for j := range px {
					px[j] = byte(rng.IntN(256))
				}
				rows[i] = SplitRow{ID: id, Label: int32(id % 10), Score: rng.Float64(), Lang: langs[rng.IntN(3)], Pixels: px}
				id++
			}
			if o.Only >= 0 && p != o.Only {
				continue
			}
			var buf bytes.Buffer
			w := parquet.NewGenericWriter[SplitRow](&buf, parquet.Compression(&parquet.Snappy), parquet.PageBufferSize(64<<10))
			if _, err := w.Write(rows); err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			name := PartitionFile(p, k)
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
				return err
			}
			lo, hi := rows[0], rows[0]
			for _, r := range rows {
				lo.ID, hi.ID = min(lo.ID, r.ID), max(hi.ID, r.ID)
				lo.Label, hi.Label = min(lo.Label, r.Label), max(hi.Label, r.Label)
				lo.Score, hi.Score = min(lo.Score, r.Score), max(hi.Score, r.Score)
				lo.Lang, hi.Lang = min(lo.Lang, r.Lang), max(hi.Lang, r.Lang)
			}
			stats, _ := json.Marshal(map[string]any{"numRecords": len(rows),
				"minValues": map[string]any{"id": lo.ID, "label": lo.Label, "score": lo.Score, "lang": lo.Lang},
				"maxValues": map[string]any{"id": hi.ID, "label": hi.Label, "score": hi.Score, "lang": hi.Lang},
				"nullCount": map[string]any{"id": 0, "label": 0, "score": 0, "lang": 0, "pixels": 0}})
			lines = append(lines, map[string]any{"add": map[string]any{"path": name, "partitionValues": map[string]any{"split": fmt.Sprintf("p%d", p)},
				"size": buf.Len(), "modificationTime": ts, "dataChange": true, "stats": string(stats)}})
		}
	}
	var b []byte
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			return err
		}
		b = append(append(b, j...), '\n')
	}
	return os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), b, 0o644)
}
