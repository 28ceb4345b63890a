package gcsstore_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// newBucket creates a fresh bucket on f.
func newBucket(f *gcstest.Fake) string {
	b := storagetest.UniqueName()
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
	return storagetest.OpenRemote(t, location, func(ctx context.Context, loc string) (*gcsstore.Store, error) {
		return gcsstore.New(ctx, loc, o)
	})
}

// ctxT: see storagetest.Ctx.
func ctxT(t testing.TB) context.Context { return storagetest.Ctx(t) }
