package azstore_test

import (
	"fmt"
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// The shared suite on Azurite, through each location form: abfss:// (read
// through the Blob API of the same account, which is what Azurite serves),
// az:// and wasbs://, under a prefix and at the container root.
func TestConformanceAzurite(t *testing.T) {
	srv := aztest.Start(t, aztest.Options{})
	useConnString(t, srv.Endpoint)
	c := newContainer(t, srv.Endpoint, false)
	n := 0
	forms := []string{
		"abfss://%s@devstoreaccount1.dfs.core.windows.net/tables/t%d",
		"az://%s/tables/t%d",
		"wasbs://%s@devstoreaccount1.blob.core.windows.net/tables/t%d",
	}
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		n++
		return open(t, fmt.Sprintf(forms[n%len(forms)], c, n), testOptions())
	})
}

func TestConformanceAzuriteContainerRoot(t *testing.T) {
	srv := aztest.Start(t, aztest.Options{})
	useConnString(t, srv.Endpoint)
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		return open(t, "az://"+newContainer(t, srv.Endpoint, false), testOptions())
	})
}
