package snapshot

import (
	"context"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

func logFilePath(dir string, name string) string { return filepath.Join(dir, "_delta_log", name) }

func mustOpen(t testing.TB, st storage.Storage, opts ...Options) *Table {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	tbl, err := OpenWithOptions(context.Background(), st, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tbl
}

func mustSnapshot(t testing.TB, tbl *Table, v int64) *Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(context.Background(), v)
	if err != nil {
		t.Fatalf("Snapshot(%d): %v", v, err)
	}
	return s
}

// sameSnapshot compares what two snapshots say about their version.
func sameSnapshot(t *testing.T, what string, a, b *Snapshot) {
	t.Helper()
	if a.Version != b.Version {
		t.Fatalf("%s: versions %d and %d", what, a.Version, b.Version)
	}
	if len(a.Files) != len(b.Files) {
		t.Fatalf("%s: version %d: %d files vs %d", what, a.Version, len(a.Files), len(b.Files))
	}
	for i := range a.Files {
		fa, fb := a.Files[i], b.Files[i]
		if fa.Path != fb.Path || fa.DeletionVector.UniqueID() != fb.DeletionVector.UniqueID() || fa.Size != fb.Size ||
			fa.NumRecords != fb.NumRecords || fa.LiveRows() != fb.LiveRows() ||
			!maps.EqualFunc(fa.PartitionValues, fb.PartitionValues, equalStringPtr) {
			t.Fatalf("%s: version %d: file %d differs:\n%+v\n%+v", what, a.Version, i, *fa, *fb)
		}
	}
	if a.Protocol.String() != b.Protocol.String() || !slices.Equal(a.Protocol.WriterFeatures, b.Protocol.WriterFeatures) {
		t.Fatalf("%s: version %d: protocol %v vs %v", what, a.Version, a.Protocol.String(), b.Protocol.String())
	}
	ma, mb := a.Metadata, b.Metadata
	if ma.ID != mb.ID || ma.SchemaString != mb.SchemaString || !slices.Equal(ma.PartitionColumns, mb.PartitionColumns) ||
		!maps.Equal(ma.Configuration, mb.Configuration) || ma.Format.Provider != mb.Format.Provider {
		t.Fatalf("%s: version %d: metadata differs:\n%+v\n%+v", what, a.Version, ma, mb)
	}
	if a.CommitInfo.Operation != b.CommitInfo.Operation || !a.Timestamp.Equal(b.Timestamp) {
		t.Fatalf("%s: version %d: commit %q at %v vs %q at %v", what, a.Version, a.CommitInfo.Operation, a.Timestamp, b.CommitInfo.Operation, b.Timestamp)
	}
}

// memStorage is an in-memory storage.Storage for fabricated logs, with
// counters of the calls it serves.
type memStorage struct {
	mu    sync.Mutex
	files map[string][]byte
	mtime map[string]time.Time
	lists int
	reads map[string]int
}

func newMem() *memStorage {
	return &memStorage{files: map[string][]byte{}, mtime: map[string]time.Time{}, reads: map[string]int{}}
}

func (m *memStorage) set(key string, data []byte, mt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[key] = data
	m.mtime[key] = mt
}

func (m *memStorage) remove(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, key)
}

func (m *memStorage) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	var out []storage.ObjectInfo
	for k, v := range m.files {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, storage.ObjectInfo{Key: k, Size: int64(len(v)), ModTime: m.mtime[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memStorage) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.files[key]
	if !ok {
		return storage.ObjectInfo{}, &fs.PathError{Op: "stat", Path: key, Err: storage.ErrNotExist}
	}
	return storage.ObjectInfo{Key: key, Size: int64(len(v)), ModTime: m.mtime[key]}, nil
}

func (m *memStorage) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads[key]++
	v, ok := m.files[key]
	if !ok {
		return 0, &fs.PathError{Op: "read", Path: key, Err: storage.ErrNotExist}
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

func (m *memStorage) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	m.set(key, slices.Clone(data), time.Now())
	return nil
}

func (m *memStorage) Location() string { return "mem://table" }

func (m *memStorage) readCount(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads[key]
}

// loadDir loads a table directory into a memStorage (modification times
// kept).
func loadDir(t testing.TB, dir string) *memStorage {
	t.Helper()
	m := newMem()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		m.set(filepath.ToSlash(rel), data, info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
