package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/cache"
	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/table"
	"github.com/deltafs/deltafs/writer"
)

// gateStore is a real local store whose data-file reads, once armed, block
// until their context is done (or the test ends): a store that hangs, as
// S3 does when a connection stalls. It reports each read that blocks
// (entered) and each that its context released (cancelled).
type gateStore struct {
	storage.Storage
	armed     chan struct{} // closed by arm
	release   chan struct{} // closed at the end of the test
	entered   chan struct{} // one per read that blocked
	cancelled chan error    // one per blocked read released by its context
	armOnce   sync.Once
	stopOnce  sync.Once
}

func newGateStore(t *testing.T, dir string) *gateStore {
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &gateStore{Storage: st, armed: make(chan struct{}), release: make(chan struct{}),
		entered: make(chan struct{}, 64), cancelled: make(chan error, 64)}
}

func (g *gateStore) arm() { g.armOnce.Do(func() { close(g.armed) }) }

// stop releases every blocked read (registered with t.Cleanup after what
// would wait for them: the cache's Close, the unmount).
func (g *gateStore) stop() { g.stopOnce.Do(func() { close(g.release) }) }

func (g *gateStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	select {
	case <-g.armed:
	default:
		return g.Storage.ReadAt(ctx, key, p, off)
	}
	if strings.Contains(key, "_delta_log/") {
		return g.Storage.ReadAt(ctx, key, p, off)
	}
	g.entered <- struct{}{}
	select {
	case <-ctx.Done():
		g.cancelled <- ctx.Err()
		return 0, ctx.Err()
	case <-g.release:
		return 0, errors.New("released at the end of the test")
	}
}

// openGated writes a table of 200 rows of 3000 bytes each (in 4 data
// files) and opens it through a gateStore, with a memory cache too small to keep a page.
func openGated(t *testing.T) (*table.Table, *gateStore) {
	t.Helper()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := &snapshot.StructType{Fields: []snapshot.StructField{
		{Name: "id", Type: &snapshot.PrimitiveType{Name: "long"}},
		{Name: "content", Type: &snapshot.PrimitiveType{Name: "binary"}},
	}}
	var rows []writer.Row
	for i := range 200 {
		// Incompressible (xorshift): each file is about 150 KB, and the
		// pages of its first rows lie before what the read of its tail
		// takes in (the fetcher serves those from that read).
		b, x := make([]byte, 3000), uint32(i)*2654435761+1
		for j := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[j] = byte(x)
		}
		rows = append(rows, writer.Row{nil, b})
	}
	if _, err := writer.Write(t.Context(), st, schema, writer.SliceRows(rows), writer.Options{IDColumn: "id", RowsPerFile: 50}); err != nil {
		t.Fatal(err)
	}
	gate := newGateStore(t, dir)
	tb, err := table.Open(t.Context(), table.Options{Location: dir, Store: gate, Spec: &sample.Spec{Shards: 1},
		// A memory tier smaller than a page (50 rows of 3000 bytes): the
		// pages the index build read are not kept, a sample read reads again.
		Cache: cache.Options{MemBytes: 64 << 10, PrefetchWorkers: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.Close() })
	t.Cleanup(gate.stop)
	return tb, gate
}

// waitFor fails the test unless ch yields within a (loose) bound.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not within 20s", what)
	}
	var zero T
	return zero
}

// TestCancelledReadStopsStorage: a sample read whose context is cancelled
// while its page read hangs in storage returns context.Canceled, and the
// storage read itself ends (its context is the reader's, through the
// cache's fill), instead of hanging on for good.
func TestCancelledReadStopsStorage(t *testing.T) {
	tb, gate := openGated(t)
	ctx := t.Context()
	ver, err := tb.Samples.Version(ctx, tb.Latest.Version)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ver.Shard(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Len() != 200 {
		t.Fatalf("shard of %d samples, want 200", sh.Len())
	}
	gate.arm()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := sh.ReadAt(rctx, 105, make([]byte, 3000), 0) // a first row of its file
		done <- err
	}()
	waitFor(t, gate.entered, "the sample read reaching storage")
	select {
	case err := <-done:
		t.Fatalf("the read returned (%v) while its storage read hangs", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := waitFor(t, done, "the cancelled read returning"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v, want context.Canceled", err)
	}
	if err := waitFor(t, gate.cancelled, "the storage read ending with its context"); !errors.Is(err, context.Canceled) {
		t.Errorf("storage read ended with %v, want context.Canceled", err)
	}
}

// TestInterruptedFUSEReadStopsStorage: a reader killed while its FUSE read
// waits on storage makes the kernel interrupt the request; go-fuse cancels
// the request's context, and that reaches the storage read, which ends.
// O_DIRECT makes the read the reader's own request (a buffered read may be
// kernel read-ahead, which is never interrupted).
func TestInterruptedFUSEReadStopsStorage(t *testing.T) {
	tb, gate := openGated(t)
	root, err := fusefs.NewRoot(t.Context(), fusefs.Options{Samples: tb.Samples})
	if err != nil {
		t.Fatal(err)
	}
	mnt := mounttest.InProcessRaw(t, root, root.MountOptions(tb.Location, false, false))
	t.Cleanup(gate.stop)
	shard := filepath.Join(mnt, "version", fmt.Sprint(tb.Latest.Version), "shard", "0")
	manifest, err := os.ReadFile(filepath.Join(shard, "_samples.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(manifest), "\n")
	if len(lines) < 101 {
		t.Fatalf("_samples.tsv of %d lines", len(lines))
	}
	file := filepath.Join(shard, strings.Split(lines[100], "\t")[0])
	gate.arm()
	dd := exec.Command("dd", "if="+file, "of=/dev/null", "iflag=direct", "bs=4096", "count=1")
	var out bytes.Buffer
	dd.Stderr = &out
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- dd.Wait() }()
	waitFor(t, gate.entered, "dd's read reaching storage")
	if err := dd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, gate.cancelled, "the storage read ending after the interrupt"); !errors.Is(err, context.Canceled) {
		t.Errorf("storage read ended with %v, want context.Canceled", err)
	}
	err = waitFor(t, exited, "the killed reader exiting")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("dd: %v (%s), want killed", err, out.String())
	}
}
