package gcsstore_test

import (
	"fmt"
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

func TestConformanceFakeGCS(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	bucket := newBucket(f)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		n++
		return open(t, fmt.Sprintf("gs://%s/tables/t%d", bucket, n), testOptions(f.Endpoint))
	})
}

func TestConformanceFakeGCSBucketRoot(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		return open(t, "gs://"+newBucket(f), testOptions(f.Endpoint))
	})
}
