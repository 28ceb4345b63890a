package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
)

func testLogger(t testing.TB) (*slog.Logger, *testkit.SyncBuffer) {
	lb := &testkit.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cache log:\n%s", lb.String())
		}
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// fakeClock advances 1 ms on every reading, so recencies are distinct and
// ordered by call order.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time { return time.Unix(0, c.ns.Add(int64(time.Millisecond))) }

func open(t testing.TB, o Options) *Cache {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func key(i int) Key {
	return Key{Kind: "page", Table: "s3://bucket/tbl", File: fmt.Sprintf("part-%05d.parquet", i/10), Version: "123456", Column: "features", Unit: fmt.Sprint(i % 10)}
}

// payload is deterministic bytes for a key: a test can always tell whether
// what it got is right.
func payload(k Key, n int) []byte {
	out := make([]byte, n)
	seed := sha256.Sum256([]byte(k.String()))
	var ctr [8]byte
	for off, i := 0, uint64(0); off < n; i++ {
		binary.LittleEndian.PutUint64(ctr[:], i)
		block := sha256.Sum256(append(seed[:], ctr[:]...))
		off += copy(out[off:], block[:])
	}
	return out
}

// source is a fetch counter and payload generator.
type source struct {
	n     atomic.Int64
	sizes func(Key) int
}

func (s *source) fetch(k Key) FetchFunc {
	return func(ctx context.Context) ([]byte, error) {
		s.n.Add(1)
		n := 1000
		if s.sizes != nil {
			n = s.sizes(k)
		}
		return payload(k, n), nil
	}
}

func mustGet(t testing.TB, c *Cache, k Key, f FetchFunc, want []byte) {
	t.Helper()
	got, err := c.Get(context.Background(), k, f)
	if err != nil {
		t.Fatalf("Get %v: %v", k, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get %v: got %d bytes that differ from the %d expected", k, len(got), len(want))
	}
}

func entryPath(c *Cache, k Key) string {
	r, err := k.ref()
	if err != nil {
		panic(err)
	}
	return c.disk.path(r.name)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ownFiles lists the cache's files under root by kind, for assertions.
func ownFiles(t testing.TB, dir string) (entries, temps []string) {
	t.Helper()
	root := filepath.Join(dir, subdirName)
	err := walkOwn(root, func(p string, kind fileKind, _ os.FileInfo) error {
		switch kind {
		case kindEntry:
			entries = append(entries, p)
		case kindTemp:
			temps = append(temps, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return entries, temps
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
