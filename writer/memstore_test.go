package writer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot/snaptest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestObjectStore: concurrent appends and an overwrite through a flat
// object store; the snapshot package reads the result.
func TestObjectStore(t *testing.T) {
	ctx := context.Background()
	st := storagetest.NewMem()
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range 4 {
				if _, err := Write(ctx, st, tagSchema, tagged(fmt.Sprintf("w%d-%d", w, a), 2), Options{IDColumn: "id"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tbl := snaptest.Open(t, st)
	s := snaptest.Version(t, tbl, -1)
	if s.Version != 11 || s.NumRows() != 24 {
		t.Fatalf("version %d, %d rows", s.Version, s.NumRows())
	}
	next, err := nextID(ctx, st, &state{snap: s, version: s.Version}, "id")
	if err != nil || next != 24 {
		t.Fatalf("next id %d %v", next, err)
	}
	res, err := Write(ctx, st, tagSchema, tagged("ow", 1), Options{IDColumn: "id", Mode: ModeOverwrite})
	if err != nil || res.Removed != 12 || res.Version != 12 {
		t.Fatalf("overwrite %+v %v", res, err)
	}
}

// TestCommitFailure: a commit put that fails for another reason than a
// lost race fails the write, without retrying and without a version.
func TestCommitFailure(t *testing.T) {
	ctx := context.Background()
	st := storagetest.NewMem()
	boom := errors.New("network down")
	st.FailPut = func(key string) error {
		if strings.HasPrefix(key, logDir) {
			return boom
		}
		return nil
	}
	_, err := Write(ctx, st, tagSchema, tagged("x", 1), Options{IDColumn: "id"})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "commit version 0") {
		t.Fatalf("err %v", err)
	}
	if objs, _ := st.List(ctx, logDir, ""); len(objs) != 0 {
		t.Fatalf("log has %d objects", len(objs))
	}
}

// TestStatsFallback: a table whose adds carry no stats (another writer's)
// still gets the next id, by reading the id column.
func TestStatsFallback(t *testing.T) {
	ctx := context.Background()
	st := storagetest.NewMem()
	if _, err := Write(ctx, st, tagSchema, SliceRows([]Row{{int64(41), "a"}, {int64(7), "b"}}), Options{}); err != nil {
		t.Fatal(err)
	}
	// Strip the stats from the commit.
	key := logKey(0)
	var kept []string
	for _, line := range strings.Split(string(st.Data(key)), "\n") {
		if i := strings.Index(line, `,"stats":`); i >= 0 {
			line = line[:i] + "}}"
		}
		kept = append(kept, line)
	}
	st.Set(key, []byte(strings.Join(kept, "\n")), time.Now())
	s, err := readState(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.liveFiles()[0].Stats != "" {
		t.Fatal("stats still there")
	}
	next, err := nextID(ctx, st, s, "id")
	if err != nil || next != 42 {
		t.Fatalf("next id %d %v", next, err)
	}
}
