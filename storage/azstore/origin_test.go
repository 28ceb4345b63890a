package azstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/azstore"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// vended is a catalog's credential source handing out one SAS.
type vended struct{}

func (vended) Credentials(context.Context) (storage.Credentials, error) {
	return storage.Credentials{AzureSAS: "sv=2023-11-03&sp=rl&sig=dmVuZGVkLXNpZ25hdHVyZQ%3D%3D", Expires: time.Now().Add(time.Hour)}, nil
}

// TestCredentialsStayAtOrigin: the Shared Key signature never follows a
// redirect to another port of the same host (Go's client forwards
// Authorization to the same host on any port); nor does a vended SAS.
func TestCredentialsStayAtOrigin(t *testing.T) {
	storagetest.RunRedirect(t, map[string]func(*testing.T, string) (storage.Storage, error){
		"shared key": func(t *testing.T, endpoint string) (storage.Storage, error) {
			useConnString(t, endpoint+"/"+aztest.Account)
			o := testOptions()
			o.MaxAttempts = 1
			return azstore.New(ctxT(t), "az://lake/t", o)
		},
		"vended": func(t *testing.T, endpoint string) (storage.Storage, error) {
			clearAzureEnv(t)
			return storage.Open(ctxT(t), "az://lake/t", storage.Options{Credentials: vended{},
				Azure: storage.AzureOptions{Endpoint: endpoint + "/" + aztest.Account, RemoteOptions: storage.RemoteOptions{MaxAttempts: 1}}})
		},
	})
}
