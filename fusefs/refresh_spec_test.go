package fusefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// A commit that drops a column the mount's own spec needs (the class, the
// id, a column of --where) leaves the version listed, failing with EIO and
// one warning, and latest where it was; a later commit that brings the
// column back moves latest on.
func TestMountLatestSkipsVersionsTheSpecCannotServe(t *testing.T) {
	bin := mounttest.Binary(t)
	for _, tc := range []struct {
		name, drop string
		flags      []string
		cause      string
	}{
		{"class", "label", []string{"--class-column", "label"}, "--class-column label: no such column (columns: id, key, content)"},
		{"id", "key", []string{"--id-column", "key"}, "--id-column key: no such column (columns: id, label, content)"},
		{"where", "label", []string{"--where", "label = 'a'"}, `--where: no column \"label\" (columns: id, key, content)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			schema := &snapshot.StructType{Fields: []snapshot.StructField{
				{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}, Nullable: true},
				{Name: "label", Type: &snapshot.PrimitiveType{Name: "string"}, Nullable: true},
				{Name: "key", Type: &snapshot.PrimitiveType{Name: "string"}, Nullable: true},
				{Name: "content", Type: &snapshot.PrimitiveType{Name: "binary"}, Nullable: true},
			}}
			var rows []writer.Row
			for i := range 4 {
				rows = append(rows, writer.Row{nil, "a", "k" + strconv.Itoa(i), []byte{byte(i)}})
			}
			if _, err := writer.Write(t.Context(), st, schema, writer.SliceRows(rows), writer.Options{IDColumn: "id"}); err != nil {
				t.Fatal(err)
			}
			m := mounttest.Start(t, bin, dir, append([]string{"--refresh", "200ms", "--cache-dir", "none"}, tc.flags...)...)
			refreshLatestIs(t, m, "version/0", 5*time.Second)

			var kept []string
			for _, f := range schema.Fields {
				if f.Name != tc.drop {
					kept = append(kept, `{\"name\":\"`+f.Name+`\",\"type\":\"`+f.Type.String()+`\",\"nullable\":true,\"metadata\":{}}`)
				}
			}
			meta := func(fields []string) string {
				return `{"metaData":{"id":"m","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[` +
					strings.Join(fields, ",") + `]}","partitionColumns":[],"configuration":{}}}` + "\n" + refreshEmptyCommit
			}
			refreshWriteCommit(t, dir, 1, meta(kept))
			refreshListed(t, m, "1", 10*time.Second)
			refreshStays(t, m, "version/0")
			if _, err := os.ReadDir(filepath.Join(m.Dir, "version", "1", "shard", "0")); !errors.Is(err, syscall.EIO) {
				t.Fatalf("version/1/shard/0: %v, want EIO", err)
			}
			warns := 0
			for _, l := range strings.Split(m.Log(), "\n") {
				if strings.Contains(l, `msg="latest does not move`) {
					warns++
					if !strings.Contains(l, "version=1 ") || !strings.Contains(l, tc.cause) || !strings.Contains(l, "table="+dir) {
						t.Errorf("warning %q does not name the table, version 1 and %q", l, tc.cause)
					}
				}
			}
			if warns != 1 {
				t.Fatalf("%d skip warnings, want 1; log:\n%s", warns, m.Log())
			}

			var all []string
			for _, f := range schema.Fields {
				all = append(all, `{\"name\":\"`+f.Name+`\",\"type\":\"`+f.Type.String()+`\",\"nullable\":true,\"metadata\":{}}`)
			}
			refreshWriteCommit(t, dir, 2, meta(all))
			refreshLatestIs(t, m, "version/2", 10*time.Second)
		})
	}
}
