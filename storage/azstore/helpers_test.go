package azstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/aztest"
	"github.com/deltafs/deltafs/storage/azstore"
	"github.com/deltafs/deltafs/storage/remote"
)

var containerSeq atomic.Int64

// newContainer creates a fresh container on endpoint.
func newContainer(t testing.TB, endpoint string, public bool) string {
	t.Helper()
	c := fmt.Sprintf("deltafs-test-%d-%d", time.Now().UnixNano()%1e6, containerSeq.Add(1))
	aztest.CreateContainer(t, endpoint, c, public)
	return c
}

// testOptions are fast retries for tests; the credentials are the
// connection string set by useConnString.
func testOptions() azstore.Options {
	return azstore.Options{
		RetryDelay: 10 * time.Millisecond,
		Tuning: remote.Tuning{
			MaxAttempts:    4,
			MaxBackoff:     20 * time.Millisecond,
			RequestTimeout: 10 * time.Second,
			Logger:         slog.New(slog.DiscardHandler),
		},
	}
}

// useConnString points the credential chain at endpoint (Azurite's, or a
// proxy's) through AZURE_STORAGE_CONNECTION_STRING, as a user would, and
// clears the other variables of the chain.
func useConnString(t testing.TB, endpoint string) {
	t.Helper()
	clearAzureEnv(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", aztest.ConnString(endpoint))
}

func clearAzureEnv(t testing.TB) {
	for _, v := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT",
		"AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
		"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE"} {
		t.Setenv(v, "")
	}
}

func open(t testing.TB, location string, o azstore.Options) *azstore.Store {
	t.Helper()
	st, err := azstore.NewWithOptions(context.Background(), location, o)
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
