package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// mountPrefill mounts tbl with a prefill budget (0: none).
func mountPrefill(t *testing.T, tbl *sampletest.Table, budget int64) (string, *fusefs.Root) {
	t.Helper()
	s, err := sample.New(tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	root, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s, Prefill: budget})
	if err != nil {
		t.Fatal(err)
	}
	return mounttest.InProcessRaw(t, root, root.MountOptions("memtable", false, false)), root
}

func prefilled(r *fusefs.Root) (bytes, files int64) {
	st := r.PrefillStats()
	bytes, _ = st["bytes"].(int64)
	files, _ = st["files"].(int64)
	return bytes, files
}

// TestPrefillServesReadsWithoutRequests: after a listing, the samples the
// budget covers are in the page cache: reading them sends no READ and gives
// the bytes a mount without prefill gives; past the budget, samples are
// read as usual, and the bytes pushed never exceed it.
func TestPrefillServesReadsWithoutRequests(t *testing.T) {
	const n = 200
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(n, 0)}}, nil, nil)
	plain, plainRoot := mountPrefill(t, tbl, 0)
	sd := filepath.Join("version", "0", "shard", "0")
	ents, err := os.ReadDir(filepath.Join(plain, sd))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	var total int64
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".png" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(plain, sd, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want[e.Name()], total = b, total+int64(len(b))
	}
	if len(want) != n || plainRoot.Counters().SampleReads.Load() < n {
		t.Fatalf("the plain mount: %d samples, %d READs", len(want), plainRoot.Counters().SampleReads.Load())
	}
	if b, _ := prefilled(plainRoot); b != 0 {
		t.Fatalf("no budget, yet %d bytes pushed", b)
	}

	for _, tc := range []struct {
		name   string
		budget int64
	}{{"whole", 1 << 20}, {"a third", total / 3}} {
		t.Run(tc.name, func(t *testing.T) {
			mnt, root := mountPrefill(t, tbl, tc.budget)
			if _, err := os.ReadDir(filepath.Join(mnt, sd)); err != nil {
				t.Fatal(err)
			}
			var pushedBytes, pushed int64
			// Wait until the pushing stops.
			for end, last := time.Now().Add(5*time.Second), int64(-1); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				pushedBytes, pushed = prefilled(root)
				if pushed == last && pushed > 0 {
					break
				}
				last = pushed
			}
			if pushedBytes > tc.budget {
				t.Fatalf("%d bytes pushed, over the budget %d", pushedBytes, tc.budget)
			}
			if tc.budget >= total && pushed != n || pushed == 0 {
				t.Fatalf("%d of %d samples pushed (%d bytes, budget %d)", pushed, n, pushedBytes, tc.budget)
			}
			reads := root.Counters().SampleReads.Load()
			for name, w := range want {
				got, err := os.ReadFile(filepath.Join(mnt, sd, name))
				if err != nil || !bytes.Equal(got, w) {
					t.Fatalf("%s: %v, %d bytes, want %d equal ones", name, err, len(got), len(w))
				}
			}
			if got := root.Counters().SampleReads.Load() - reads; got != n-pushed {
				t.Fatalf("%d READs for %d samples of which %d pushed, want %d", got, n, pushed, n-pushed)
			}
		})
	}
}

// TestPrefillKeepsUpWithALongListing: a listing of many samples, which
// the kernel reads far faster than they are pushed, has every sample
// pushed: none is dropped for a full queue (the first cut queued at most
// 256 listing replies and slept a millisecond per reply, so a listing of
// 60,000 samples lost one in six and pushed the rest over 2.4 s).
func TestPrefillKeepsUpWithALongListing(t *testing.T) {
	const n = 20000
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(n, 0)}}, nil, nil)
	mnt, root := mountPrefill(t, tbl, 1<<30)
	sd := filepath.Join(mnt, "version", "0", "shard", "0")
	if _, err := os.ReadDir(sd); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, files := prefilled(root); files == n {
			break
		}
	}
	st := root.PrefillStats()
	if files, _ := st["files"].(int64); files != n || st["missed"].(int64) != 0 {
		t.Fatalf("prefill after a listing of %d samples: %v, want all pushed and none missed", n, st)
	}
}

// prefillGoroutines counts the goroutines running the prefill.
func prefillGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "fs.(*prefiller).run(")
}

// TestPrefillEndsWithTheMount: the prefill's goroutine ends when its mount
// does (it outlived every in-process mount: a leak per mount, and a read
// stuck in storage could hold it), and a Root that never listed, or never
// mounted, starts none.
func TestPrefillEndsWithTheMount(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(50, 0)}}, nil, nil)
	before := prefillGoroutines()
	s, err := sample.New(tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s, Prefill: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if n := prefillGoroutines(); n != before {
		t.Fatalf("a Root that never mounted runs %d prefill goroutines", n-before)
	}
	t.Run("mount", func(t *testing.T) {
		mnt, root := mountPrefill(t, tbl, 1<<20)
		if _, err := os.ReadDir(filepath.Join(mnt, "version", "0", "shard", "0")); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, files := prefilled(root); files == 50 {
				break
			}
		}
		if _, files := prefilled(root); files != 50 || prefillGoroutines() <= before {
			t.Fatalf("%d files pushed by %d goroutines, want 50 by at least 1", files, prefillGoroutines()-before)
		}
	})
	// The subtest's cleanup unmounted it.
	for end := time.Now().Add(5 * time.Second); prefillGoroutines() > before && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := prefillGoroutines() - before; n != 0 {
		t.Fatalf("%d prefill goroutines still run after the unmount", n)
	}
}

// TestPrefillPushesNothingOfAnUnreadableFile: samples whose data file is
// gone after the index was built fail the prefill's read, so nothing of
// them is pushed (their budget is given back and they count as missed),
// and the reader's own READ of each answers EIO, never empty or stale
// bytes; the other file's samples are pushed as usual.
func TestPrefillPushesNothingOfAnUnreadableFile(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a", Rows: digits(20, 0)}, {Path: "b", Rows: digits(20, 100)}}, nil, nil)
	mnt, root := mountPrefill(t, tbl, 1<<20)
	sd := filepath.Join(mnt, "version", "0", "shard", "0")
	if _, err := os.Stat(filepath.Join(sd, "_samples.tsv")); err != nil { // builds the index
		t.Fatal(err)
	}
	tbl.Vacuum("b")
	if _, err := os.ReadDir(sd); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if st := root.PrefillStats(); st["files"].(int64)+st["missed"].(int64) >= 40 {
			break
		}
	}
	st := root.PrefillStats()
	if st["files"].(int64) != 20 || st["missed"].(int64) != 20 {
		t.Fatalf("prefill with one of two files gone: %v, want 20 pushed and 20 missed", st)
	}
	if _, err := os.ReadFile(filepath.Join(sd, "105.png")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a sample of the vacuumed file: %v, want EIO", err)
	}
	if b, err := os.ReadFile(filepath.Join(sd, "5.png")); err != nil || len(b) == 0 {
		t.Fatalf("a sample of the readable file: %d bytes, %v", len(b), err)
	}
}
