package fusefs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// TestStatsFresh: every read of MOUNT/.deltafs/stats is a new rendering,
// even within the attribute timeout of the mount (--refresh, an hour
// here): neither the kernel's attribute cache nor its page cache may serve
// an old one. The rendering has the same length every time, so a stale
// page would not be noticed by a size change.
func TestStatsFresh(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(4, 0)}}, nil, nil)
	s, err := sample.New(tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	root, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s, Refresh: time.Hour,
		Stats: func() any { return map[string]string{"rendering": fmt.Sprintf("%08d", n.Add(1))} }})
	if err != nil {
		t.Fatal(err)
	}
	dir := mounttest.InProcessRaw(t, root, root.MountOptions("memtable", false, false))
	// A sample file's Open answers ENOSYS, after which the kernel sends no
	// OPEN on the whole mount: freshness cannot rest on OPEN.
	if _, err := os.ReadFile(filepath.Join(dir, "version", "0", "shard", "0", "0.png")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".deltafs", "stats")
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		// Attribute timeouts count in kernel ticks (up to 10 ms): a read
		// within the same tick may be served the previous rendering.
		time.Sleep(20 * time.Millisecond)
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
