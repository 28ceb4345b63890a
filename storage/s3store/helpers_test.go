package s3store_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/internal/s3test"
	"github.com/deltafs/deltafs/storage"
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
		S3Options:      storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region},
		Credentials:    credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		MaxAttempts:    4,
		MaxBackoff:     20 * time.Millisecond,
		RequestTimeout: 10 * time.Second,
		Logger:         slog.New(slog.DiscardHandler),
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

// checkGoroutines fails t if, after cleanup, more goroutines run than
// before the test (allowing them a few seconds to end). Register it first,
// so that it runs after every other cleanup.
//
// Toxiproxy's own goroutines are not counted: v2.5.0 leaks link goroutines
// blocked on a channel send when a toxic (reset_peer, limit_data) ends a
// stream, even after the proxy is stopped. That is the test harness, not
// the store.
func checkGoroutines(t *testing.T) {
	before := countGoroutines()
	t.Cleanup(func() {
		var now int
		var dump string
		for deadline := time.Now().Add(5 * time.Second); ; {
			now, dump = countGoroutinesDump()
			if now <= before || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if now > before {
			t.Errorf("goroutine leak: %d before, %d after\n%s", before, now, dump)
		}
	})
}

func countGoroutines() int {
	n, _ := countGoroutinesDump()
	return n
}

// countGoroutinesDump counts the goroutines other than Toxiproxy's and
// the test runner's, and returns their stacks.
func countGoroutinesDump() (int, string) {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var keep []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "github.com/Shopify/toxiproxy/"),
			strings.Contains(g, "testing.(*T).Run("),
			strings.Contains(g, "testing.tRunner("),
			strings.Contains(g, "testing.(*M)."),
			strings.Contains(g, "runtime.goexit") && strings.Contains(g, "os/signal."):
			continue
		}
		keep = append(keep, g)
	}
	return len(keep), strings.Join(keep, "\n\n")
}
