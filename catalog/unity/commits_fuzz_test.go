package unity

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// FuzzLoadTableAnswer: any loadTable answer, on a log holding a staged
// commit and published commits, is refused in one line naming the table,
// or gives a view the log can follow: versions contiguous up to the
// latest, each commit either readable from a staged file named for its
// version or failing in one line; the listing sorted, without
// duplicates, nothing past the latest version.
func FuzzLoadTableAnswer(f *testing.F) {
	const staged = "00000000000000000002.0f707846-cd18-4e01-b40e-84ee0ae987b0.json"
	for _, s := range []string{
		`{"metadata":{"properties":{"delta.feature.catalogManaged":"supported"}},"commits":[{"version":2,"timestamp":1,"file-name":"` + staged + `","file-size":3,"file-modification-timestamp":1}],"latest-table-version":2}`,
		`{"metadata":{},"commits":[],"latest-table-version":1}`,
		`{"commits":[{"version":3,"file-name":"x","file-size":1},{"version":2,"file-name":"` + staged + `","file-size":3}],"latest-table-version":3}`,
		`{"commits":[{"version":2,"file-name":"../../etc/passwd","file-size":-1}]}`,
		`{"commits":[{"version":9223372036854775807,"file-name":"` + staged + `","file-size":3}]}`,
		`{"latest-table-version":-5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a LoadTableResponse
		if json.Unmarshal(data, &a) != nil {
			return
		}
		mem := storagetest.NewMem()
		now := time.Unix(1e9, 0)
		mem.Set("_delta_log/00000000000000000000.json", []byte("{}\n"), now)
		mem.Set("_delta_log/00000000000000000001.json", []byte("{}\n"), now)
		mem.Set("_delta_log/00000000000000000005.checkpoint.parquet", []byte("PAR1"), now)
		mem.Set("_delta_log/_staged_commits/"+staged, []byte("{}\n"), now)
		ctx := context.Background()
		c, err := newCatalogLog(ctx, mem, "uc://a.b.c", a, func(context.Context) (LoadTableResponse, error) { return a, nil },
			func(err error) string { return err.Error() })
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(msg, "uc://a.b.c") != 1 {
				t.Fatalf("not one line naming the table once: %q", msg)
			}
			return
		}
		v := c.view
		if v.latest < 0 {
			t.Fatalf("latest %d", v.latest)
		}
		for n, r := range v.commits {
			if n > v.latest || v.latest-n >= int64(len(v.commits)) {
				t.Fatalf("commit %d outside the contiguous run up to %d", n, v.latest)
			}
			if r.bad == nil && (!strings.HasPrefix(r.key, stagedDir+fmt.Sprintf("%020d.", n)) || strings.Contains(r.key[len(stagedDir):], "/")) {
				t.Fatalf("version %d read from %q", n, r.key)
			}
			if r.bad != nil && strings.Contains(r.bad.Error(), "\n") {
				t.Fatalf("not one line: %q", r.bad)
			}
		}
		infos, err := c.List(ctx, "_delta_log/0", "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(infos, func(x, y storage.ObjectInfo) int { return strings.Compare(x.Key, y.Key) }) {
			t.Fatalf("unsorted listing %v", infos)
		}
		for i, oi := range infos {
			if i > 0 && infos[i-1].Key == oi.Key {
				t.Fatalf("%s listed twice", oi.Key)
			}
			if first, last, ok := logVersions(oi.Key); ok && (first > v.latest || last > v.latest) {
				t.Fatalf("%s listed past the latest version %d", oi.Key, v.latest)
			}
			if _, err := storage.ReadAll(ctx, c, oi.Key); err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("not one line: %q", err)
			}
		}
	})
}
