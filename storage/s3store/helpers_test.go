package s3store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// newBucket creates a fresh bucket on endpoint.
func newBucket(t testing.TB, endpoint string) string {
	t.Helper()
	b := storagetest.UniqueName()
	s3test.CreateBucket(t, endpoint, b)
	return b
}

// testOptions are fast retries for tests.
func testOptions(endpoint string) s3store.Options {
	return s3store.Options{
		S3Options:   storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region},
		Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		Tuning: remote.Tuning{
			MaxAttempts:    4,
			MaxBackoff:     20 * time.Millisecond,
			RequestTimeout: 10 * time.Second,
			Logger:         slog.New(slog.DiscardHandler),
		},
	}
}

func open(t testing.TB, location string, o s3store.Options) *s3store.Store {
	t.Helper()
	return storagetest.OpenRemote(t, location, func(ctx context.Context, loc string) (*s3store.Store, error) {
		return s3store.New(ctx, loc, o)
	})
}

// ctxT: see storagetest.Ctx.
func ctxT(t testing.TB) context.Context { return storagetest.Ctx(t) }

// checkGoroutines: see cloudtest.CheckGoroutines.
func checkGoroutines(t *testing.T) { cloudtest.CheckGoroutines(t) }
