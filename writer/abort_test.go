package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/snapshot/snaptest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// cancelAfter is Rows that cancels its context after n rows, as a signal
// would in the middle of an import.
type cancelAfter struct {
	n, i   int
	cancel context.CancelFunc
}

func (c *cancelAfter) Next() (Row, error) {
	if c.i == c.n {
		c.cancel()
	}
	if c.i == 10*c.n {
		return nil, io.EOF
	}
	c.i++
	return Row{nil, fmt.Sprintf("r%d", c.i)}, nil
}

// TestInterruptedWrite: a write whose context ends between rows stops
// there, commits nothing, and names every data file it stored.
func TestInterruptedWrite(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Write(ctx, snaptest.Local(t, dir), tagSchema, &cancelAfter{n: 250, cancel: cancel}, Options{IDColumn: "id", RowsPerFile: 100})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var ae *AbortError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v is no *AbortError", err)
	}
	if ae.MaybeCommitted != -1 {
		t.Errorf("MaybeCommitted = %d, want -1", ae.MaybeCommitted)
	}
	onDisk := testkit.DirNames(t, dir)
	orphans := slices.Clone(ae.Orphans)
	sort.Strings(orphans)
	if len(orphans) != 2 || !slices.Equal(onDisk, orphans) {
		t.Fatalf("orphans %q, the table directory holds %q; want the same 2 data files (no log)", orphans, onDisk)
	}
}

// flakyCommit is a storagetest.Mem whose commit puts fail after (land) or before
// (lost) storing, and whose reads can fail too.
type flakyCommit struct {
	*storagetest.Mem
	land      bool
	readsFail bool
}

var errCutOff = errors.New("connection reset while waiting for the answer")

func (f *flakyCommit) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if !strings.HasPrefix(key, logDir) {
		return f.Mem.Put(ctx, key, data, ifAbsent)
	}
	if f.land {
		if err := f.Mem.Put(ctx, key, data, ifAbsent); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: %w", key, errCutOff)
}

func (f *flakyCommit) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if f.readsFail && strings.HasPrefix(key, logDir) {
		return storage.ObjectInfo{}, fmt.Errorf("%s: %w", key, errCutOff)
	}
	return f.Mem.Stat(ctx, key)
}

// TestCommitPutLooksBeforeAnswering: a commit put that fails is read
// back: one that landed is a success, one that did not commits nothing, one
// that cannot be read back may have landed.
func TestCommitPutLooksBeforeAnswering(t *testing.T) {
	ctx := context.Background()

	st := &flakyCommit{Mem: storagetest.NewMem(), land: true}
	res, err := Write(ctx, st, tagSchema, tagged("x", 3), Options{IDColumn: "id"})
	if err != nil || res.Version != 0 || res.Rows != 3 {
		t.Fatalf("a commit that landed behind a cut-off answer: %+v, %v; want version 0", res, err)
	}

	st = &flakyCommit{Mem: storagetest.NewMem()}
	_, err = Write(ctx, st, tagSchema, tagged("x", 3), Options{IDColumn: "id"})
	var ae *AbortError
	if !errors.Is(err, errCutOff) || !errors.As(err, &ae) || ae.MaybeCommitted != -1 || len(ae.Orphans) != 1 {
		t.Fatalf("a commit that did not land: %v (%+v); want an AbortError, nothing committed, 1 orphan", err, ae)
	}
	if st.Data(ae.Orphans[0]) == nil {
		t.Errorf("orphan %s is not in the store", ae.Orphans[0])
	}

	st = &flakyCommit{Mem: storagetest.NewMem(), land: true, readsFail: true}
	_, err = Write(ctx, st, tagSchema, tagged("x", 3), Options{IDColumn: "id"})
	if !errors.As(err, &ae) || ae.MaybeCommitted != 0 {
		t.Fatalf("a commit that cannot be read back: %v; want MaybeCommitted 0", err)
	}
}

// TestFailedWriteBeforeFilesIsPlain: a write that fails before storing
// anything returns its cause as it is.
func TestFailedWriteBeforeFilesIsPlain(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Write(ctx, snaptest.Local(t, dir), tagSchema, tagged("x", 3), Options{IDColumn: "id"})
	var ae *AbortError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ae) {
		t.Fatalf("err = %v; want context.Canceled, no AbortError", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the table directory holds %d entries", len(entries))
	}
}
