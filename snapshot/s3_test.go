package snapshot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// TestOpenS3TableWideErrors: a missing bucket is not "not a Delta table"
// (an empty log): Open fails with the store's message naming the bucket,
// once. A missing table in an existing bucket is "not a Delta table".
func TestOpenS3TableWideErrors(t *testing.T) {
	endpoint := s3test.StartGofakes3(t)
	s3test.CreateBucket(t, endpoint, "present")
	s3test.Put(t, endpoint, "present", "other/x.txt", []byte("x"))
	open := func(loc string) error {
		st, err := s3store.New(context.Background(), loc, s3store.Options{
			S3Options:   storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region},
			Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
			Tuning:      remote.Tuning{MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, err = snapshot.Open(context.Background(), st)
		return err
	}

	err := open("s3://absent-bucket/tables/t")
	if err == nil || errors.Is(err, snapshot.ErrNotDeltaTable) || !storage.IsTableWide(err) ||
		!strings.Contains(err.Error(), "bucket absent-bucket does not exist") ||
		strings.Count(err.Error(), "s3://absent-bucket/tables/t") != 1 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("missing bucket: %v", err)
	}
	t.Log(err)

	err = open("s3://present/tables/nope")
	if !errors.Is(err, snapshot.ErrNotDeltaTable) || !strings.Contains(err.Error(), "s3://present/tables/nope") {
		t.Fatalf("missing table: %v", err)
	}
	t.Log(err)
}
