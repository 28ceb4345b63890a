package s3store_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/internal/s3test"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
)

var bucketSeq atomic.Int64

// newBucket creates a fresh bucket on endpoint.
func newBucket(t testing.TB, endpoint string) string {
	t.Helper()
	b := fmt.Sprintf("deltafs-test-%d-%d", time.Now().UnixNano()%1e6, bucketSeq.Add(1))
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
	st, err := s3store.NewWithOptions(context.Background(), location, o)
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

// checkGoroutines: see cloudtest.CheckGoroutines.
func checkGoroutines(t *testing.T) { cloudtest.CheckGoroutines(t) }
