package azstore_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/azstore"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// newContainer creates a fresh container on endpoint.
func newContainer(t testing.TB, endpoint string, public bool) string {
	t.Helper()
	c := storagetest.UniqueName()
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

// clearAzureEnv: see aztest.ClearEnv.
func clearAzureEnv(t testing.TB) { aztest.ClearEnv(t) }

func open(t testing.TB, location string, o azstore.Options) *azstore.Store {
	t.Helper()
	return storagetest.OpenRemote(t, location, func(ctx context.Context, loc string) (*azstore.Store, error) {
		return azstore.New(ctx, loc, o)
	})
}

// ctxT: see storagetest.Ctx.
func ctxT(t testing.TB) context.Context { return storagetest.Ctx(t) }
