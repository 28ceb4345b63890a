package azstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestHealthSuite: the endpoint circuit breaker on Azurite, through a
// Toxiproxy that dies or goes silent (see storagetest.RunHealth).
func TestHealthSuite(t *testing.T) {
	srv := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, srv.Endpoint, "health", false)
	n := 0
	storagetest.RunHealth(t, storagetest.HealthCloud{
		Name:   "azure",
		Server: strings.TrimSuffix(srv.Endpoint, "/"+aztest.Account),
		Open: func(t *testing.T, base string, tune remote.Tuning) storagetest.HealthStore {
			n++
			useConnString(t, base+"/"+aztest.Account)
			o := testOptions()
			o.Tuning = tune
			return open(t, fmt.Sprintf("az://health/t%d", n), o)
		},
		Secrets: []string{aztest.Key},
	})
}
