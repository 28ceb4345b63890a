package sample_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/page"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
	"github.com/deltafs/deltafs/scan"
	"github.com/deltafs/deltafs/snapshot"
)

// A tar view's first reader builds the shard's index (the data files'
// ids and sizes) and the archive's layout. A reader that goes away in the
// middle of that build (a FUSE interrupt: a Go context cancelled) must
// leave nothing behind: the next reader builds it again and gets the
// whole archive, byte for byte as after a clean build; a reader that
// stays while another leaves gets the whole archive too; and no
// goroutine of the cancelled build outlives it.

// gate holds reads of one data file, while armed, until their context
// ends or the gate is disarmed (a slow read that completes then): reads a
// test interrupts at a known point.
type gate struct {
	file    string
	inside  chan struct{} // receives each time a read reached the gate
	mu      sync.Mutex
	armed   bool
	release chan struct{} // closed when disarmed
}

func newGate(file string) *gate {
	return &gate{file: file, inside: make(chan struct{}, 16), armed: true, release: make(chan struct{})}
}

func (g *gate) disarm() {
	g.mu.Lock()
	if g.armed {
		g.armed = false
		close(g.release)
	}
	g.mu.Unlock()
}

// holds reports whether a read of path starting now is held.
func (g *gate) holds(path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.armed && path == g.file
}

// wait holds a read until its context ends (its error) or the gate is
// disarmed (nil).
func (g *gate) wait(ctx context.Context) error {
	g.inside <- struct{}{}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-g.release:
		return nil
	}
}

// gatedRows is a Rows whose index reads of the gate's data file stop in
// the middle (after its first batch was seen): an index build that a test
// interrupts at a known point.
type gatedRows struct {
	sample.Rows
	*gate
}

func (g *gatedRows) Columns(ctx context.Context, snap *snapshot.Snapshot, f *snapshot.AddFile, columns []string, fn func(b *scan.Batch) error) error {
	gated := g.holds(f.Path)
	return g.Rows.Columns(ctx, snap, f, columns, func(b *scan.Batch) error {
		if err := fn(b); err != nil || !gated {
			return err
		}
		gated = false
		return g.wait(ctx)
	})
}

// gatedVersion is version 0 of tbl under spec, its rows read through a
// gate on data file d.
func gatedVersion(t *testing.T, tbl *sampletest.Table, spec sample.Spec) (*gatedRows, *sample.Version) {
	t.Helper()
	g := &gatedRows{Rows: tbl, gate: newGate("d")}
	opts := tbl.Options(spec)
	opts.Rows = g
	s, err := sample.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := s.Version(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return g, ver
}

// interruptTable is a table of files a..f, 40 samples each, with classes.
func interruptTable() *sampletest.Table {
	tbl := sampletest.New("id:long", "label:string", "data:binary")
	var adds []sampletest.Add
	for i, name := range []string{"a", "b", "c", "d", "e", "f"} {
		adds = append(adds, sampletest.Add{Path: name, Rows: rowsOf(40, 100*i, func(j int) any { return fmt.Sprint("class", j%3) }, func(j int) []byte {
			return bytes.Repeat([]byte{byte(j)}, 1+j*37%700)
		})})
	}
	tbl.Commit(t0, "WRITE", adds, nil, nil)
	return tbl
}

// cleanTar is the whole tar view of shard 0 after a build nobody
// interrupted, on a Samples of its own.
func cleanTar(t *testing.T, tbl *sampletest.Table, spec sample.Spec) []byte {
	t.Helper()
	sh := shards(t, newSamples(t, tbl, spec), 0)[0]
	return readTar(t, sh.Tar(), 1<<20)
}

// settledGoroutines waits (10 s at most) for the goroutines to come back
// to at most want, and returns how many there are.
func settledGoroutines(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTarIndexBuildInterrupted: the reader that builds the index is
// cancelled in the middle of a data file; its call fails with the
// cancellation (no shard, no tar); the next reader's tar equals a clean
// build's byte for byte; so does the tar of a reader that waited on the
// same build while the first one left.
func TestTarIndexBuildInterrupted(t *testing.T) {
	tbl := interruptTable()
	for _, layout := range []string{sample.LayoutBalanced, sample.LayoutContiguous} {
		spec := sample.Spec{ClassColumn: "label", Layout: layout}
		want := cleanTar(t, tbl, spec)
		t.Run(fmt.Sprint(layout, "/alone"), func(t *testing.T) {
			base := runtime.NumGoroutine()
			g, ver := gatedVersion(t, tbl, spec)
			ctx, cancel := context.WithCancel(context.Background())
			type result struct {
				sh  *sample.Shard
				err error
			}
			done := make(chan result, 1)
			go func() {
				sh, err := ver.Shard(ctx, 0)
				done <- result{sh, err}
			}()
			select {
			case <-g.inside:
			case <-time.After(10 * time.Second):
				t.Fatal("the index build never reached data file d")
			}
			cancel()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled build did not return within 10 s")
			}
			if r.sh != nil || !errors.Is(r.err, context.Canceled) {
				t.Fatalf("the cancelled build gave shard %v, error %v; want no shard and the cancellation", r.sh, r.err)
			}
			g.disarm()
			sh, err := ver.Shard(context.Background(), 0)
			if err != nil {
				t.Fatalf("the next reader: %v", err)
			}
			got := readTar(t, sh.Tar(), 1<<20)
			if !bytes.Equal(got, want) || sh.Tar().Size() != int64(len(want)) {
				t.Fatalf("after an interrupted build the tar has %d bytes (size %d), a clean build's %d, and they differ", len(got), sh.Tar().Size(), len(want))
			}
			if n := settledGoroutines(base); n > base {
				t.Fatalf("%d goroutines after the interrupted build, %d before", n, base)
			}
		})
		t.Run(fmt.Sprint(layout, "/shared"), func(t *testing.T) {
			g, ver := gatedVersion(t, tbl, spec)
			// Two readers in the same build: the first leaves while the
			// build is held; the second, which joined it, stays and gets
			// the whole archive once the held read completes.
			leave, cancelLeave := context.WithCancel(context.Background())
			left := make(chan error, 1)
			go func() { _, err := ver.Shard(leave, 0); left <- err }()
			<-g.inside
			type result struct {
				sh  *sample.Shard
				err error
			}
			stayed := make(chan result, 1)
			go func() { sh, err := ver.Shard(context.Background(), 0); stayed <- result{sh, err} }()
			time.Sleep(50 * time.Millisecond) // the second joins the build
			cancelLeave()
			if err := <-left; !errors.Is(err, context.Canceled) {
				t.Fatalf("the reader that left: %v, want the cancellation", err)
			}
			g.disarm()
			var r result
			select {
			case r = <-stayed:
			case <-time.After(10 * time.Second):
				t.Fatal("the reader that stayed got no shard within 10 s")
			}
			if r.err != nil {
				t.Fatalf("the reader that stayed: %v", r.err)
			}
			if got := readTar(t, r.sh.Tar(), 1<<20); !bytes.Equal(got, want) {
				t.Fatalf("the reader that stayed got a tar of %d bytes, a clean build's is %d, and they differ", len(got), len(want))
			}
		})
	}
}

// gatedFetcher is a Fetcher whose reads of the gate's data file's sample
// bytes are held.
type gatedFetcher struct {
	sample.Fetcher
	*gate
}

func (g *gatedFetcher) Value(ctx context.Context, f page.FileRef, column string, row int64) ([]byte, error) {
	if g.holds(f.Path) {
		if err := g.wait(ctx); err != nil {
			return nil, err
		}
	}
	return g.Fetcher.Value(ctx, f, column, row)
}

func (g *gatedFetcher) Values(ctx context.Context, f page.FileRef, column string, fn func(row int64, v []byte) error) error {
	if g.holds(f.Path) {
		if err := g.wait(ctx); err != nil {
			return err
		}
	}
	return g.Fetcher.Values(ctx, f, column, fn)
}

// TestTarReadInterrupted: a read of the archive cancelled while it reads
// a sample's bytes fails with the cancellation and fills nothing it
// reports; a whole read afterwards equals a clean build's archive.
func TestTarReadInterrupted(t *testing.T) {
	tbl := interruptTable()
	for _, spec := range []sample.Spec{{ClassColumn: "label"}, {}} {
		want := cleanTar(t, tbl, spec)
		g := &gatedFetcher{Fetcher: tbl, gate: newGate("-")}
		opts := tbl.Options(spec)
		opts.Fetcher = g
		s, err := sample.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		sh := shards(t, s, 0)[0]
		tv := sh.Tar()
		g.mu.Lock()
		g.file = "e"
		g.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		buf := make([]byte, tv.Size())
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		go func() { n, err := tv.ReadAt(ctx, buf, 0); done <- result{n, err} }()
		select {
		case <-g.inside:
		case <-time.After(10 * time.Second):
			t.Fatalf("%+v: the read never reached data file e", spec)
		}
		cancel()
		r := <-done
		if r.n != 0 || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("%+v: the cancelled read gave %d bytes, %v; want none and the cancellation", spec, r.n, r.err)
		}
		g.disarm()
		if got := readTar(t, tv, 1<<20); !bytes.Equal(got, want) {
			t.Fatalf("%+v: after an interrupted read the tar has %d bytes, a clean build's %d, and they differ", spec, len(got), len(want))
		}
	}
}
