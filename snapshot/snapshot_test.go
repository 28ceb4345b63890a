package snapshot

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFileKey(t *testing.T) {
	cases := []struct {
		root, path, want string
	}{
		{"/data/t", "part-0.parquet", "part-0.parquet"},
		{"/data/t", "letter=%252F%252520%2525f/part-0.parquet", "letter=%2F%2520%25f/part-0.parquet"},
		{"/data/t", "data=%F0%9F%98%88/x.parquet", "data=😈/x.parquet"},
		{"/data/t", "data=😈/x.parquet", "data=😈/x.parquet"},
		{"/data/t", "a%20b/c+d.parquet", "a b/c+d.parquet"},
		{"/data/t", "time=12:00/x.parquet", "time=12:00/x.parquet"},
		{"/data/t", "/data/t/sub/x.parquet", "sub/x.parquet"},
		{"/data/t", "file:/data/t/x.parquet", "x.parquet"},
		{"/data/t", "file:///data/t/a%20b/x.parquet", "a b/x.parquet"},
		{"s3://bucket/tables/t", "s3://bucket/tables/t/x.parquet", "x.parquet"},
		{"s3://bucket/tables/t", "s3a://bucket/tables/t/p=1/x.parquet", "p=1/x.parquet"},
	}
	for _, c := range cases {
		got, err := fileKey(c.root, c.path)
		if err != nil || got != c.want {
			t.Errorf("fileKey(%q, %q) = %q, %v; want %q", c.root, c.path, got, err, c.want)
		}
	}
	for _, c := range []struct{ root, path string }{
		{"/data/t", ""},
		{"/data/t", "/data/other/x.parquet"},
		{"/data/t", "/data/t2/x.parquet"},
		{"/data/t", "file:///etc/passwd"},
		{"/data/t", "../x.parquet"},
		{"/data/t", "a/../../x.parquet"},
		{"/data/t", "a/%2E%2E/%2E%2E/x.parquet"},
		{"/data/t", "a//x.parquet"},
		{"/data/t", "bad%zzescape"},
		{"/data/t", "s3://bucket/t/x.parquet"},
		{"s3://bucket/tables/t", "s3://other/tables/t/x.parquet"},
		{"s3://bucket/tables/t", "gs://bucket/tables/t/x.parquet"},
		{"s3://bucket/tables/t", "/tables/t/x.parquet"},
	} {
		if got, err := fileKey(c.root, c.path); err == nil {
			t.Errorf("fileKey(%q, %q) = %q, want an error", c.root, c.path, got)
		}
	}
	// Through a snapshot: the error names the table and version.
	tbl := mustOpen(t, openLocal(t, filepath.Join(testdataDir, "dat-basic_append")))
	s := mustSnapshot(t, tbl, 1)
	if _, err := s.FileKey("/elsewhere/x.parquet"); err == nil || !strings.Contains(err.Error(), "version 1: data file \"/elsewhere/x.parquet\": absolute path outside the table") {
		t.Errorf("FileKey outside: %v", err)
	}
}

func TestCheckProtocol(t *testing.T) {
	ok := []Protocol{
		{MinReaderVersion: 1, MinWriterVersion: 2},
		{MinReaderVersion: 2, MinWriterVersion: 5},
		{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{}},
		{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview"}},
	}
	for _, p := range ok {
		if err := CheckProtocol(&p); err != nil {
			t.Errorf("%v: %v", p.String(), err)
		}
	}
	bad := []struct {
		p    Protocol
		want string
	}{
		{Protocol{MinReaderVersion: 0}, "reader version 0 is not supported"},
		{Protocol{MinReaderVersion: 4}, "reader version 4 is not supported"},
		{Protocol{MinReaderVersion: 99, MinWriterVersion: 7}, "reader version 99 is not supported (deltafs reads versions 1 to 3)"},
		{Protocol{MinReaderVersion: 3}, "reader version 3 without a readerFeatures list"},
		{Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"variantType-preview"}}, `reader feature "variantType-preview" is not supported`},
		{Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"deletionVectors", "catalogManaged", "variantType", "catalogManaged"}}, `reader features "catalogManaged", "variantType" are not supported; ` + catalogManagedHint},
		{Protocol{MinReaderVersion: 3, ReaderFeatures: []string{"catalogManaged"}}, `reader feature "catalogManaged" is not supported; the table's newest commits live in its catalog: open it through its catalog (uc://CATALOG.SCHEMA.TABLE)`},
		{Protocol{MinReaderVersion: 5, ReaderFeatures: []string{"blahabl"}}, `reader version 5 is not supported (deltafs reads versions 1 to 3); reader feature "blahabl" is not supported`},
	}
	for _, c := range bad {
		err := CheckProtocol(&c.p)
		var u *UnsupportedFeatureError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an *UnsupportedFeatureError saying %q", c.p.String(), err, c.want)
		}
	}
	if err := CheckProtocol(nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("nil protocol: %v", err)
	}
}

// A protocol upgrade in the middle of the log refuses the versions after
// it only: the table opens, the versions before it read, and the error
// names the version asked for and the commit that upgraded.
func TestProtocolRefusedFromAVersion(t *testing.T) {
	f := newFakeLog(t)
	f.simple(3)
	f.commit(4, protocolAction(3, 7, "someFutureFeature"))
	f.commit(5, addAction("f5", 5))
	ctx := context.Background()
	tbl := mustOpen(t, f.st)
	var u *UnsupportedFeatureError
	for _, v := range []int64{-1, 5} {
		_, err := tbl.Snapshot(ctx, v)
		if !errors.As(err, &u) || !slices.Equal(u.Features, []string{"someFutureFeature"}) {
			t.Fatalf("Snapshot(%d): %v", v, err)
		}
		wantErr(t, err, nil, "mem://table version 5: _delta_log/00000000000000000004.json: unsupported table protocol")
	}
	checkSimple(t, tbl, 3)
	// Without the last two commits the table opens, and version 3 reads.
	f.st.Remove(commitKey(5))
	f.st.Remove(commitKey(4))
	tbl = mustOpen(t, f.st)
	f.commit(4, protocolAction(3, 7, "someFutureFeature"))
	if _, err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	checkSimple(t, tbl, 3)
	_, err := tbl.Snapshot(ctx, 4)
	if !errors.As(err, &u) {
		t.Fatalf("Snapshot(4): %v", err)
	}
	// History stops at the refused version.
	n := 0
	err = tbl.History(ctx, nil, func(VersionStats) error { n++; return nil })
	if !errors.As(err, &u) || n != 4 {
		t.Fatalf("History: %d versions, %v", n, err)
	}
}

// A catalog-managed table opened by its path (without its catalog, which
// holds its newest commits) is refused in one line that names the feature
// and says to open it through uc://.
func TestCatalogManagedByPathRefused(t *testing.T) {
	f := newFakeLog(t)
	f.commit(0, protocolAction(3, 7, "deletionVectors", CatalogManagedFeature), metadataAction(nil))
	f.commit(1, addAction("f1", 1))
	ctx := context.Background()
	var err error
	if tbl, oerr := Open(ctx, f.st); oerr != nil {
		err = oerr
	} else {
		_, err = tbl.Snapshot(ctx, -1)
	}
	var u *UnsupportedFeatureError
	if !errors.As(err, &u) || !slices.Equal(u.Features, []string{CatalogManagedFeature}) {
		t.Fatalf("got %v, want the catalogManaged feature refused", err)
	}
	wantErr(t, err, nil, "mem://table version 1: _delta_log/00000000000000000000.json: unsupported table protocol: "+
		`reader feature "catalogManaged" is not supported; the table's newest commits live in its catalog: open it through its catalog (uc://CATALOG.SCHEMA.TABLE)`)
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(msg, "catalogManaged") != 1 || strings.Count(msg, "version") != 1 {
		t.Fatalf("not one line naming each thing once: %q", msg)
	}
}

// TestCatalogManagedThroughCatalog: with Options.CatalogManaged (a
// storage presenting the catalog's log) the feature is read; other
// unsupported features are still refused.
func TestCatalogManagedThroughCatalog(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	f.commit(0, protocolAction(3, 7, "deletionVectors", CatalogManagedFeature), metadataAction(nil))
	f.commit(1, addAction("f1", 1))
	tbl, err := OpenWithOptions(ctx, f.st, Options{CatalogManaged: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Snapshot(ctx, -1)
	if err != nil || s.Version != 1 || len(s.Files) != 1 {
		t.Fatalf("%v, %v", s, err)
	}
	if _, err := tbl.Versions(ctx); err != nil {
		t.Fatal(err)
	}
	g := newFakeLog(t)
	g.commit(0, protocolAction(3, 7, CatalogManagedFeature, "variantType"), metadataAction(nil))
	tbl, err = OpenWithOptions(ctx, g.st, Options{CatalogManaged: true})
	if err == nil {
		_, err = tbl.Snapshot(ctx, -1)
	}
	var u *UnsupportedFeatureError
	if !errors.As(err, &u) || !slices.Equal(u.Features, []string{"variantType"}) {
		t.Fatalf("got %v, want variantType refused", err)
	}
	// Opened through a catalog that gives no commits: refused, saying why.
	tbl, err = OpenWithOptions(ctx, f.st, Options{CatalogManagedHint: "its catalog gives none"})
	if err == nil {
		_, err = tbl.Snapshot(ctx, -1)
	}
	wantErr(t, err, nil, `reader feature "catalogManaged" is not supported; its catalog gives none`)
}

func TestColumnMapping(t *testing.T) {
	ctx := context.Background()
	// Name mode: partition values keyed by physical name.
	s := mustSnapshot(t, mustOpen(t, openLocal(t, filepath.Join(testdataDir, "deltars-table_with_column_mapping"))), 0)
	if s.ColumnMappingMode() != "name" {
		t.Fatalf("mode %q", s.ColumnMappingMode())
	}
	pcs := s.PartitionColumns()
	if len(pcs) != 1 || pcs[0].Name != "Company Very Short" || pcs[0].PhysicalName != "col-173b4db9-b5ad-427f-9e75-516aae37fbbb" || pcs[0].Type.String() != "string" {
		t.Fatalf("partition columns %+v", pcs)
	}
	var vals []string
	for _, f := range s.Files {
		v, ok := s.PartitionValue(f, "Company Very Short")
		if !ok {
			t.Fatalf("%s: no partition value", f.Path)
		}
		vals = append(vals, v)
	}
	slices.Sort(vals)
	if !slices.Equal(vals, []string{"BME", "BMS"}) {
		t.Errorf("partition values %v", vals)
	}
	for _, fld := range s.Schema.Fields {
		if !strings.HasPrefix(fld.PhysicalName(), "col-") {
			t.Errorf("%s: physical name %q", fld.Name, fld.PhysicalName())
		}
		if _, ok := fld.FieldID(); !ok {
			t.Errorf("%s: no field id", fld.Name)
		}
	}

	// Id mode with nested types.
	s = mustSnapshot(t, mustOpen(t, openLocal(t, filepath.Join(testdataDir, "golden-table-with-columnmapping-mode-id"))), 0)
	if s.ColumnMappingMode() != "id" {
		t.Fatalf("mode %q", s.ColumnMappingMode())
	}
	ids := map[int64]bool{}
	for _, fld := range s.Schema.Fields {
		id, ok := fld.FieldID()
		if !ok || ids[id] {
			t.Errorf("%s: field id %d, %v", fld.Name, id, ok)
		}
		ids[id] = true
	}
	want := map[string]string{
		"nested_struct":    "struct<",
		"array_of_prims":   "array<integer>",
		"array_of_arrays":  "array<array<integer>>",
		"array_of_structs": "array<struct<",
		"map_of_prims":     "map<integer,long>",
		"map_of_rows":      "map<integer,struct<",
		"map_of_arrays":    "map<long,array<integer>>",
		"decimal":          "decimal(",
	}
	for name, prefix := range want {
		f := s.Schema.Field(name)
		if f == nil || !strings.HasPrefix(f.Type.String(), prefix) {
			t.Errorf("%s: %v, want %s...", name, f, prefix)
		}
	}
	if st, ok := s.Schema.Field("nested_struct").Type.(*StructType); !ok || len(st.Fields) == 0 || st.Fields[0].PhysicalName() == st.Fields[0].Name {
		t.Errorf("nested_struct fields have no physical names: %+v", st)
	}
	_ = ctx
}

func TestPartitionValuesUnmapped(t *testing.T) {
	s := mustSnapshot(t, mustOpen(t, openLocal(t, filepath.Join(testdataDir, "dat-multi_partitioned"))), 1)
	pcs := s.PartitionColumns()
	if len(pcs) != 3 || pcs[0].PhysicalName != "letter" {
		t.Fatalf("partition columns %+v", pcs)
	}
	nulls := 0
	for _, f := range s.Files {
		if _, ok := s.PartitionValue(f, "date"); !ok {
			nulls++
		}
	}
	if nulls != 2 {
		t.Errorf("%d files with a null date, want 2", nulls)
	}
}
