package storagetest

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Mem is a storage.Storage in memory with an object store's semantics
// (flat keys, no directories, Put(ifAbsent) an atomic conditional create),
// so that what works on it uses nothing local-only; it passes Run. Tests
// also set objects with the modification time they choose, remove them,
// count the reads of a key and inject Put faults (FailPut).
type Mem struct {
	// FailPut, when set, is called before each Put: an error it returns
	// is the Put's, and nothing is stored.
	FailPut func(key string) error

	mu    sync.Mutex
	objs  map[string]memObject
	reads map[string]int
	lists int
}

type memObject struct {
	data  []byte
	mtime time.Time
}

var _ storage.Storage = (*Mem)(nil)

// NewMem is an empty Mem.
func NewMem() *Mem { return &Mem{objs: map[string]memObject{}, reads: map[string]int{}} }

// Set stores data (not copied) under key with modification time mtime,
// replacing what was there.
func (m *Mem) Set(key string, data []byte, mtime time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = memObject{data, mtime}
}

// Data is the bytes under key (not copied), nil when there are none.
func (m *Mem) Data(key string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.objs[key].data
}

// Clone is a Mem holding the same objects, with no calls counted.
func (m *Mem) Clone() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for k, o := range m.objs {
		c.objs[k] = o
	}
	return c
}

// Remove deletes the object under key, if any.
func (m *Mem) Remove(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
}

// Reads is how many ReadAt calls key has served (or failed).
func (m *Mem) Reads(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads[key]
}

// ReadsByKey is Reads of every key read so far.
func (m *Mem) ReadsByKey() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.reads)
}

// Lists is how many List calls the Mem has served.
func (m *Mem) Lists() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lists
}

func (m *Mem) List(ctx context.Context, prefix, startAfter string) ([]storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	var out []storage.ObjectInfo
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, storage.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.mtime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *Mem) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return storage.ObjectInfo{}, &fs.PathError{Op: "stat", Path: key, Err: storage.ErrNotExist}
	}
	return storage.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.mtime}, nil
}

func (m *Mem) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads[key]++
	o, ok := m.objs[key]
	if !ok {
		return 0, &fs.PathError{Op: "read", Path: key, Err: storage.ErrNotExist}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: key, Err: fs.ErrInvalid}
	}
	return bytes.NewReader(o.data).ReadAt(p, off)
}

func (m *Mem) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if m.FailPut != nil {
		if err := m.FailPut(key); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok && ifAbsent {
		return &fs.PathError{Op: "put", Path: key, Err: storage.ErrExist}
	}
	m.objs[key] = memObject{slices.Clone(data), time.Now()}
	return nil
}

func (m *Mem) Location() string { return "mem://table" }
