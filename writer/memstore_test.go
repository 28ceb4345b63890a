package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// memStore is an object store in memory with S3's semantics: flat keys,
// no directories, Put(ifAbsent) as an atomic conditional create. Writes
// that work here use nothing local-only.
type memStore struct {
	mu      sync.Mutex
	objs    map[string][]byte
	failPut func(key string) error // injected fault, nil for none
}

var _ storage.Storage = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{objs: map[string][]byte{}} }

func (m *memStore) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []storage.ObjectInfo
	for k, v := range m.objs {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, storage.ObjectInfo{Key: k, Size: int64(len(v)), ModTime: time.Unix(0, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.objs[key]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	return storage.ObjectInfo{Key: key, Size: int64(len(v)), ModTime: time.Unix(0, 0)}, nil
}

func (m *memStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	m.mu.Lock()
	v, ok := m.objs[key]
	m.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("%s: %w", key, storage.ErrNotExist)
	}
	if off >= int64(len(v)) {
		return 0, io.EOF
	}
	n := copy(p, v[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memStore) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if m.failPut != nil {
		if err := m.failPut(key); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok && ifAbsent {
		return fmt.Errorf("%s: %w", key, storage.ErrExist)
	}
	m.objs[key] = append([]byte(nil), data...)
	return nil
}

func (m *memStore) Location() string { return "mem://table" }

// TestObjectStore: concurrent appends and an overwrite through a flat
// object store; the snapshot package reads the result.
func TestObjectStore(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
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
	tbl, err := snapshot.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
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
	st := newMemStore()
	boom := errors.New("network down")
	st.failPut = func(key string) error {
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
	st := newMemStore()
	if _, err := Write(ctx, st, tagSchema, SliceRows([]Row{{int64(41), "a"}, {int64(7), "b"}}), Options{}); err != nil {
		t.Fatal(err)
	}
	// Strip the stats from the commit.
	key := logKey(0)
	var kept []string
	for _, line := range strings.Split(string(st.objs[key]), "\n") {
		if i := strings.Index(line, `,"stats":`); i >= 0 {
			line = line[:i] + "}}"
		}
		kept = append(kept, line)
	}
	st.objs[key] = []byte(strings.Join(kept, "\n"))
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
