package s3store_test

import (
	"fmt"
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

func TestConformanceGofakes3(t *testing.T) {
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		n++
		return open(t, fmt.Sprintf("s3://%s/tables/t%d", bucket, n), testOptions(ep))
	})
}

func TestConformanceGofakes3BucketRoot(t *testing.T) {
	ep := s3test.StartGofakes3(t)
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		return open(t, "s3://"+newBucket(t, ep), testOptions(ep))
	})
}
