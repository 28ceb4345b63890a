package fs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	dfs "github.com/deltafs/deltafs/fs"
	"github.com/deltafs/deltafs/internal/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/memtable"
)

// TestStatsFresh: every read of MOUNT/.deltafs/stats is a new rendering,
// even within the attribute timeout of the mount (--refresh, an hour
// here): neither the kernel's attribute cache nor its page cache may serve
// an old one. The rendering has the same length every time, so a stale
// page would not be noticed by a size change.
func TestStatsFresh(t *testing.T) {
	tbl := memtable.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []memtable.Add{{Path: "a", Rows: digits(4, 0)}}, nil, nil)
	s, err := sample.New(tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	root, err := dfs.NewRoot(context.Background(), dfs.Options{Samples: s, Refresh: time.Hour,
		Stats: func() any { return map[string]string{"rendering": fmt.Sprintf("%08d", n.Add(1))} }})
	if err != nil {
		t.Fatal(err)
	}
	dir := mounttest.InProcess(t, root, root.MountOptions("memtable", false, false))
	path := filepath.Join(dir, ".deltafs", "stats")
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(b)] {
			t.Fatalf("read %d of the stats file served an old rendering: %s", i, b)
		}
		seen[string(b)] = true
	}
}
