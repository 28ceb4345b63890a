package storagetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/remote"
)

// RemoteStore is an object store backend's Store, as its tests hold it.
type RemoteStore interface {
	Stats() remote.Stats
	Close() error
}

// OpenRemote opens a backend's store on location with open and fails t if
// it cannot; t.Cleanup checks that no request still holds a concurrency
// slot (a body left open) and closes it.
func OpenRemote[S RemoteStore](t testing.TB, location string, open func(ctx context.Context, location string) (S, error)) S {
	t.Helper()
	st, err := open(context.Background(), location)
	if err != nil {
		t.Fatalf("open %s: %v", location, err)
	}
	t.Cleanup(func() {
		if s := st.Stats(); s.InFlight != 0 {
			t.Errorf("%d requests still hold a concurrency slot", s.InFlight)
		}
		st.Close()
	})
	return st
}

// Ctx is a context for a test's requests: two minutes at the most,
// canceled when the test ends.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var nameSeq atomic.Int64

// UniqueName is a bucket or container name of its own for a test
// (deltafs-test-N-M: lower case, digits and dashes, valid in every cloud).
func UniqueName() string {
	return fmt.Sprintf("deltafs-test-%d-%d", time.Now().UnixNano()%1e6, nameSeq.Add(1))
}
