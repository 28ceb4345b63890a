package gcsstore_test

import (
	"fmt"
	"testing"

	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestHealthSuite: the endpoint circuit breaker on fake-gcs-server,
// through a Toxiproxy that dies or goes silent (see
// storagetest.RunHealth).
func TestHealthSuite(t *testing.T) {
	f := gcstest.NewFake(t, nil)
	f.CreateBucket("health")
	n := 0
	storagetest.RunHealth(t, storagetest.HealthCloud{
		Name:   "gcs",
		Server: f.Endpoint,
		Open: func(t *testing.T, base string, tune remote.Tuning) storagetest.HealthStore {
			n++
			o := testOptions(base)
			o.Tuning = tune
			return open(t, fmt.Sprintf("gs://health/t%d", n), o)
		},
	})
}
