package scan

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
)

const testdataDir = "../testdata/delta"

type expectedVersion struct {
	Rows    *int64   `json:"rows"`
	Columns []string `json:"columns"`
}

type expectedCheck struct {
	Label   string `json:"label"`
	Version int64  `json:"version"`
	Rows    int64  `json:"expected_rows"`
}

type expectedTable struct {
	Versions          map[string]expectedVersion `json:"versions"`
	Unreconstructable []int64                    `json:"unreconstructable_versions"`
	Checks            []expectedCheck            `json:"expected_checks"`
}

func loadExpected(t testing.TB) map[string]expectedTable {
	t.Helper()
	var out map[string]expectedTable
	testkit.Expected(t, &out)
	return out
}

func (e expectedTable) versionList() []int64 {
	return testkit.Readable(e.Versions, e.Unreconstructable)
}

// refusedTables are refused by log replay (protocol), so never scanned.
var refusedTables = map[string]bool{
	"golden-deltalog-invalid-protocol-version": true,
	"deltars-simple_table_features":            true,
	"deltars-spark-variant-checkpoint":         true,
}

// scanJSON scans every live row of snap into JSON lines, in scan order.
func scanJSON(t testing.TB, snap *snapshot.Snapshot, columns []string) []string {
	t.Helper()
	return scanJSONOpts(t, snap, columns, Options{})
}

func scanJSONOpts(t testing.TB, snap *snapshot.Snapshot, columns []string, opts Options) []string {
	t.Helper()
	sc, err := NewWithOptions(snap, columns, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	err = sc.All(context.Background(), func(f *snapshot.AddFile, i int64, row []any) error {
		out = append(out, string(sc.AppendJSON(nil, row)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expectedJSON reads the upstream expected rows under dir (Parquet files
// with logical column names) as JSON lines, through the same decoding and
// rendering as the scan, with the table's fields.
func expectedJSON(t testing.TB, dir string, fields []snapshot.StructField) []string {
	t.Helper()
	st := snaptest.Local(t, dir)
	infos, err := st.List(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, info := range infos {
		if !strings.HasSuffix(info.Key, ".parquet") {
			continue
		}
		r, err := openParquet(context.Background(), st, info.Key, info.Size, -1, info.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = r.ReadRows(context.Background(), fields, 0, r.NumRows(), func(_ int64, row []any) error {
			out = append(out, string(AppendJSON(nil, fields, row)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
