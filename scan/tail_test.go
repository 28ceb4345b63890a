package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltafs/deltafs/internal/pqcheck"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot/snaptest"
	"github.com/deltafs/deltafs/storage"
)

// TestTailOption: with Options.Tail, a scan opens data files from the
// tail it is given and reads no tail from storage, with the same rows;
// a tail that lies (not the file's end, damaged, another file's) fails
// the file in one error naming it, never read as the file; a tail
// source's missing object is the data file missing.
func TestTailOption(t *testing.T) {
	dir := testkit.CopyTable(t, "golden-dv-partitioned-with-checkpoint")
	snap := snaptest.Version(t, snaptest.OpenDir(t, dir), -1)
	st := snap.Table.Storage()
	ctx := context.Background()
	tails := map[string][]byte{}
	offs := map[string]int64{}
	for _, f := range snap.Files {
		key, _ := snap.FileKey(f.Path)
		tail, off, _, err := pqcheck.ReadTail(storage.ReaderAt(ctx, st, key), f.Size)
		if err != nil {
			t.Fatal(err)
		}
		tails[key], offs[key] = tail, off
	}
	want := sorted(scanJSON(t, snap, nil))
	var asked atomic.Int64
	given := Options{Tail: func(ctx context.Context, key string, size int64) ([]byte, int64, error) {
		asked.Add(1)
		return tails[key], offs[key], nil
	}}
	ends := &endReads{Storage: st}
	snap2 := snaptest.Version(t, snaptest.Open(t, ends), -1)
	if got := sorted(scanJSONOpts(t, snap2, nil, given)); !slices.Equal(got, want) {
		t.Fatalf("rows through given tails differ:\n%v\nwant\n%v", got, want)
	}
	if asked.Load() != int64(len(snap.Files)) || ends.n.Load() != 0 {
		t.Errorf("%d tails asked for %d files, %d reads of a file's end: want every tail given, none read", asked.Load(), len(snap.Files), ends.n.Load())
	}

	f := snap.Files[0]
	key, _ := snap.FileKey(f.Path)
	other, _ := snap.FileKey(snap.Files[1].Path)
	damaged := slices.Clone(tails[key])
	damaged[len(damaged)-9] ^= 0xff // the footer's length
	for _, c := range []struct {
		name string
		tail func() ([]byte, int64, error)
	}{
		{"not the end", func() ([]byte, int64, error) { return tails[key], offs[key] - 1, nil }},
		{"damaged", func() ([]byte, int64, error) { return damaged, offs[key], nil }},
		{"truncated", func() ([]byte, int64, error) { return tails[key][10:], offs[key] + 10, nil }},
		{"empty", func() ([]byte, int64, error) { return nil, f.Size, nil }},
		{"another file's", func() ([]byte, int64, error) { return tails[other], f.Size - int64(len(tails[other])), nil }},
		{"failing", func() ([]byte, int64, error) { return nil, 0, errors.New("tail source down") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := NewWithOptions(snap, nil, Options{Tail: func(context.Context, string, int64) ([]byte, int64, error) { return c.tail() }})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			err = sc.File(ctx, f, func(int64, []any) error { n++; return nil })
			if err == nil {
				if c.name == "another file's" && n == int(f.NumRecords) {
					// Another file's tail that fits this file's size and
					// rows would read other bytes as these: it must not.
					t.Fatalf("read %d rows through another file's tail", n)
				}
				t.Fatalf("a %s tail was accepted (%d rows)", c.name, n)
			}
			checkFileError(t, err, snap, f)
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error of more than one line: %q", err)
			}
		})
	}
	sc, _ := NewWithOptions(snap, nil, Options{Tail: func(context.Context, string, int64) ([]byte, int64, error) {
		return nil, 0, fmt.Errorf("gone: %w", storage.ErrNotExist)
	}})
	err := sc.File(ctx, f, func(int64, []any) error { return nil })
	checkFileError(t, err, snap, f)
	if !errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a tail source's missing object: %v, want the data file missing", err)
	}
}

// endReads counts the reads of a data file's last byte (tail reads;
// deletion vector files are read whole and not counted).
type endReads struct {
	storage.Storage
	n atomic.Int64
}

func (e *endReads) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if strings.HasSuffix(key, ".parquet") && !strings.Contains(key, "_delta_log/") {
		if info, err := e.Storage.Stat(ctx, key); err == nil && off+int64(len(p)) == info.Size {
			e.n.Add(1)
		}
	}
	return e.Storage.ReadAt(ctx, key, p, off)
}
