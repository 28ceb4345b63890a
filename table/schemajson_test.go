package table

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/sample"
)

// _schema.json stays within 8 times the size of the schema however
// deeply it nests (indented two spaces a level, a line at depth d costs
// 2d bytes: 3,000 levels made 285 KB of schema 270 MB), and says the
// schema exactly; a schema of ordinary depth is still indented.
func TestSchemaJSONBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schema   string
		indented bool
	}{
		{"flat", testkit.BlobSchema, true},
		{"nested 8 levels", testkit.DeepSchema(8), true},
		{"nested 12 levels", testkit.DeepSchema(12), false}, // JSON depth 38
		{"nested 3000 levels", testkit.DeepSchema(3000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			if err := testkit.WriteBlobTable(dir, tc.schema, []testkit.BlobRow{{ID: 1, Data: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
			tb, _ := openWhere(t, dir, sample.Spec{DataColumn: "data"}, "")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ver, err := tb.Samples.Version(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := ver.SchemaJSON()
			if len(got) > 8*len(tc.schema)+1 {
				t.Fatalf("_schema.json is %d bytes for a schema of %d", len(got), len(tc.schema))
			}
			var want, said any
			if err := json.Unmarshal([]byte(tc.schema), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &said); err != nil {
				t.Fatalf("_schema.json is not JSON: %v", err)
			}
			if !reflect.DeepEqual(said, want) {
				t.Fatalf("_schema.json says another schema:\n%.300s\nwant\n%.300s", got, tc.schema)
			}
			if lines := strings.Count(string(got), "\n"); tc.indented != (lines > 1) || !strings.HasSuffix(string(got), "\n") {
				t.Fatalf("_schema.json has %d lines, want indented %v:\n%.300s", lines, tc.indented, got)
			}
		})
	}
}
