package s3store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage/remote"
)

// The store's view of its endpoint is a remote.Health (the circuit
// breaker: endpoint failures for DownAfter declare it down, every attempt
// then fails at once until a probe gets an answer). What is S3's: the
// SDK's retryer asks it before each delay, httpClient.Do tells it every
// attempt's outcome, and the probe is a one-key ListObjectsV2.

// healthRetryer is the SDK's retryer: it gives up instead of waiting for
// another attempt once the endpoint is down.
type healthRetryer struct {
	*retry.Standard
	h *remote.Health
}

func (r healthRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if herr := r.h.Check(); herr != nil {
		return 0, herr
	}
	return r.Standard.RetryDelay(attempt, err)
}

// probe is one attempt of a one-key list of the table (ctx marks it as
// the probe; httpClient.Do records its outcome).
func (s *Store) probe(ctx context.Context) {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(1)}
	if s.prefix != "" {
		in.Prefix = aws.String(s.prefix)
	}
	_, _ = s.client.ListObjectsV2(ctx, in, noSDKRetry)
}
