package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/storagetest"
)

// Many goroutines asking for versions, listings, times and deletion
// vectors of one Table get the same answers as one goroutine (run with
// -race).
func TestConcurrentUse(t *testing.T) {
	const name = "golden-dv-partitioned-with-checkpoint"
	dir := filepath.Join(testdataDir, name)
	ctx := context.Background()
	ref := mustOpen(t, openLocal(t, dir))
	want := map[int64]int64{}
	for v := int64(0); v <= 15; v++ {
		want[v] = liveRows(t, mustSnapshot(t, ref, v), dir)
	}
	st := loadDir(t, dir)
	tbl := mustOpen(t, st, Options{CachedSnapshots: 3, CachedCommitActions: 50})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < 40; i++ {
				v := r.Int64N(16)
				switch i % 4 {
				case 0, 1:
					s, err := tbl.Snapshot(ctx, v)
					if err != nil {
						errs <- err
						return
					}
					var n int64
					for _, f := range s.Files {
						bm, err := s.DeletedRows(ctx, f)
						if err != nil {
							errs <- err
							return
						}
						n += f.NumRecords
						if bm != nil {
							n -= int64(bm.GetCardinality())
						}
					}
					if n != want[v] {
						errs <- fmt.Errorf("version %d: %d rows, want %d", v, n, want[v])
					}
				case 2:
					vs, err := tbl.Versions(ctx)
					if err != nil || len(vs) != 16 {
						errs <- fmt.Errorf("Versions: %d, %v", len(vs), err)
					}
				case 3:
					if _, err := tbl.VersionAt(ctx, time.Now()); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Concurrent requests for one version build it once.
func TestConcurrentBuildsOnce(t *testing.T) {
	f := newFakeLog(t)
	f.simple(40)
	tbl := mustOpen(t, f.st)
	before := f.st.Reads(commitKey(5))
	var wg sync.WaitGroup
	snaps := make([]*Snapshot, 32)
	for i := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := tbl.Snapshot(context.Background(), 5)
			if err != nil {
				t.Error(err)
			}
			snaps[i] = s
		}()
	}
	wg.Wait()
	for _, s := range snaps {
		if s != snaps[0] {
			t.Fatal("concurrent requests got different snapshots")
		}
	}
	if n := f.st.Reads(commitKey(5)) - before; n > 1 {
		t.Errorf("commit 5 read %d times", n)
	}
}

// Versions that share a data file share its *AddFile, whether they were
// built from a checkpoint or from commits.
func TestAddFilesShared(t *testing.T) {
	const name = "golden-dv-partitioned-with-checkpoint"
	tbl := mustOpen(t, openLocal(t, filepath.Join(testdataDir, name)), Options{CachedSnapshots: 1})
	s15 := mustSnapshot(t, tbl, 15) // from the checkpoint at 10
	s9 := mustSnapshot(t, tbl, 9)   // from the commits
	s10 := mustSnapshot(t, tbl, 10)
	byID := map[fileID]*AddFile{}
	for _, f := range s9.Files {
		byID[f.id()] = f
	}
	shared := 0
	for _, f := range s10.Files {
		if g, ok := byID[f.id()]; ok {
			if g != f {
				t.Errorf("%s: different pointers at versions 9 and 10", f.Path)
			}
			shared++
		}
	}
	if shared < 10 {
		t.Errorf("only %d files shared between versions 9 and 10", shared)
	}
	_ = s15
}

// gatedStorage blocks reads of one key until open is closed, signalling
// each read that arrives on entered.
type gatedStorage struct {
	*storagetest.Mem
	key     string
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedStorage) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if key == g.key {
		g.entered <- struct{}{}
		<-g.open
	}
	return g.Mem.ReadAt(ctx, key, p, off)
}

// A request that gives up while its version is being built returns at
// once with its own error (naming the table and the version); the build
// goes on, and the next request for the version joins it rather than
// building it again.
func TestAbandonedBuildGoesOn(t *testing.T) {
	f := newFakeLog(t)
	f.simple(10)
	tbl := mustOpen(t, f.st, Options{CachedCommitActions: 1}) // commits are read again
	g := &gatedStorage{Mem: f.st, key: commitKey(5), entered: make(chan struct{}, 4), open: make(chan struct{})}
	tbl.st = g
	before := f.st.Reads(commitKey(5))

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := tbl.Snapshot(ctx, 5)
		first <- err
	}()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the build never read commit 5")
	}
	cancel()
	select {
	case err := <-first:
		var e *Error
		if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Version != 5 {
			t.Fatalf("abandoned request: %v, want a version 5 *Error matching context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned request did not return")
	}

	second := make(chan *Snapshot, 1)
	go func() {
		s, err := tbl.Snapshot(context.Background(), 5)
		if err != nil {
			t.Error(err)
		}
		second <- s
	}()
	waitBuilders := time.Now().Add(10 * time.Second)
	for tbl.builds.Waiters(5) != 1 {
		if time.Now().After(waitBuilders) {
			t.Fatal("the second request did not join the build")
		}
		time.Sleep(time.Millisecond)
	}
	close(g.open)
	select {
	case s := <-second:
		if s == nil || s.Version != 5 {
			t.Fatalf("second request: %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second request did not return")
	}
	if n := f.st.Reads(commitKey(5)) - before; n != 1 {
		t.Errorf("commit 5 read %d times, want 1 (one build)", n)
	}
}
