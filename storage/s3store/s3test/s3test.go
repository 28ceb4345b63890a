// Package s3test runs S3-compatible servers on 127.0.0.1 for tests: gofakes3
// in process (fast, no signature checks), moto_server as a child process (a
// second opinion that checks SigV4; slow GETs), and an endpoint that
// accepts connections and never answers (StartSilent). It also uploads
// local table directories. Toxiproxy and the goroutine leak check are
// storage/cloudtest's.
//
// Every server is stopped by t.Cleanup. Clients use path-style URLs, region
// us-east-1 and the static credentials AccessKey/SecretKey.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Test credentials. gofakes3 accepts anything; moto accepts any key pair
// (it checks the signature's form, not the key: see StartMoto).
const (
	AccessKey = "AKIADELTAFSTEST00001"
	SecretKey = "deltafs/test/secret/key/0123456789abcdef"
	Region    = "us-east-1"
)

// Fake is an in-process gofakes3 server (memory backend) on a real loopback
// listener. Stop and Start restart it on the same address with the same
// objects, like a server that goes away and comes back.
type Fake struct {
	Endpoint string         // http://127.0.0.1:port
	Backend  *s3mem.Backend // the objects, shared across restarts

	*cloudtest.Loopback // OpenConns, Stop, Start
}

// NewFake starts gofakes3. wrap, if not nil, wraps its handler (fault and
// compatibility middleware: see Throttle, StripHeader).
func NewFake(t testing.TB, wrap func(http.Handler) http.Handler) *Fake {
	t.Helper()
	f, err := ServeFake(wrap)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	t.Cleanup(f.Stop)
	return f
}

// ServeFake is NewFake outside a test (benchmarks): the caller stops it.
func ServeFake(wrap func(http.Handler) http.Handler) (*Fake, error) {
	be := s3mem.New()
	var h http.Handler = gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	if wrap != nil {
		h = wrap(h)
	}
	ln, err := cloudtest.Listen()
	if err != nil {
		return nil, err
	}
	f := &Fake{Backend: be, Loopback: cloudtest.ServeLoopback(ln, h)}
	f.Endpoint = "http://" + f.Addr
	return f, nil
}

// StartGofakes3 starts an in-process gofakes3 and returns its endpoint. It
// has no buckets: create them with CreateBucket or UploadDir.
func StartGofakes3(t testing.TB) (endpoint string) {
	t.Helper()
	return NewFake(t, nil).Endpoint
}

// endpointCreds holds the key pairs of servers that check them
// (StartMotoAuth), by endpoint.
var endpointCreds sync.Map // endpoint -> [2]string

// Credentials returns the key pair that the server at endpoint accepts:
// the one StartMotoAuth created, else AccessKey and SecretKey.
func Credentials(endpoint string) (accessKey, secretKey string) {
	if v, ok := endpointCreds.Load(endpoint); ok {
		kp := v.([2]string)
		return kp[0], kp[1]
	}
	return AccessKey, SecretKey
}

// NewClient is a plain SDK client for endpoint (path style, the endpoint's
// Credentials), for setting up and changing objects behind a store's back.
func NewClient(endpoint string) *s3.Client {
	ak, sk := Credentials(endpoint)
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(ak, sk, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// No keep-alive: helper clients leave no idle connection behind
		// (tests count the server's open connections).
		HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	})
}

// CreateBucket creates bucket on the server at endpoint; an existing bucket
// is fine.
func CreateBucket(t testing.TB, endpoint, bucket string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := NewClient(endpoint).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
			err = nil
		}
	}
	if err != nil {
		t.Fatalf("s3test: create bucket %s: %v", bucket, err)
	}
}

// Put stores one object.
func Put(t testing.TB, endpoint, bucket, key string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := NewClient(endpoint).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		t.Fatalf("s3test: put s3://%s/%s: %v", bucket, key, err)
	}
}

// UploadDir uploads every regular file under localDir (a table directory
// such as testdata/delta/<table>) to bucket, under prefix, keeping relative
// paths as keys: localDir/_delta_log/0.json becomes prefix/_delta_log/0.json
// (prefix "" for the bucket root). It creates the bucket when missing and
// returns the number of files uploaded.
func UploadDir(t testing.TB, endpoint, bucket, prefix, localDir string) int {
	t.Helper()
	CreateBucket(t, endpoint, bucket)
	n, err := Upload(context.Background(), endpoint, bucket, prefix, localDir)
	if err != nil {
		t.Fatalf("s3test: upload %s: %v", localDir, err)
	}
	return n
}

// Upload is UploadDir outside a test, for an existing bucket.
func Upload(ctx context.Context, endpoint, bucket, prefix, localDir string) (int, error) {
	if prefix != "" && prefix[len(prefix)-1] != '/' {
		prefix += "/"
	}
	c := NewClient(endpoint)
	return cloudtest.WalkFiles(localDir, func(rel string, data []byte) error {
		key := prefix + rel
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := c.PutObject(pctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		}); err != nil {
			return fmt.Errorf("put s3://%s/%s: %w", bucket, key, err)
		}
		return nil
	})
}
