package s3store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// vended is a catalog's credential source handing out one AWS session.
type vended struct{}

func (vended) Credentials(context.Context) (storage.Credentials, error) {
	return storage.Credentials{AWS: &storage.AWSCredentials{AccessKeyID: "ASIAVENDED", SecretAccessKey: "vended-secret-key", SessionToken: "FwoGZXIvYXdzE-vended-session"},
		Expires: time.Now().Add(time.Hour)}, nil
}

// TestCredentialsStayAtOrigin: static or vended, the SigV4 signature and
// the session token never follow a redirect to another port of the same
// host (Go's client forwards Authorization to the same host on any port,
// and X-Amz-Security-Token anywhere).
func TestCredentialsStayAtOrigin(t *testing.T) {
	storagetest.RunRedirect(t, map[string]func(*testing.T, string) (storage.Storage, error){
		"static": func(t *testing.T, endpoint string) (storage.Storage, error) {
			o := testOptions(endpoint)
			o.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, "FwoGZXIvYXdzE-session-token")
			o.MaxAttempts = 1
			return s3store.New(ctxT(t), "s3://lake/t", o)
		},
		"vended": func(t *testing.T, endpoint string) (storage.Storage, error) {
			return storage.Open(ctxT(t), "s3://lake/t", storage.Options{Credentials: vended{},
				S3: storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region, RemoteOptions: storage.RemoteOptions{MaxAttempts: 1}}})
		},
	})
}
