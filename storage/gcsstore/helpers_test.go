package gcsstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/gcstest"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/remote"
)

var bucketSeq atomic.Int64

// newBucket creates a fresh bucket on f.
func newBucket(f *gcstest.Fake) string {
	b := fmt.Sprintf("deltafs-test-%d", bucketSeq.Add(1))
	f.CreateBucket(b)
	return b
}

// testOptions reach endpoint without authentication, with fast retries.
func testOptions(endpoint string) gcsstore.Options {
	return gcsstore.Options{
		GCSOptions: storage.GCSOptions{Endpoint: endpoint, Anonymous: true},
		Tuning: remote.Tuning{
			MaxAttempts:    4,
			MaxBackoff:     20 * time.Millisecond,
			RequestTimeout: 10 * time.Second,
			Logger:         slog.New(slog.DiscardHandler),
		},
	}
}

func open(t testing.TB, location string, o gcsstore.Options) *gcsstore.Store {
	t.Helper()
	st, err := gcsstore.NewWithOptions(context.Background(), location, o)
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

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
