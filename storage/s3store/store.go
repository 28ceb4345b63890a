package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

func init() {
	remote.Register("s3", func(ctx context.Context, location string, opts storage.Options) (*Store, error) {
		o := Options{S3Options: opts.S3}
		if opts.Credentials != nil {
			o.Credentials = vendedAWS{opts.Credentials}
			o.uncached = true
		}
		return New(ctx, location, o)
	})
}

// DefaultSlowAnswer is the default of Options.SlowAnswer (the other defaults
// are remote's, shared by every backend).
const DefaultSlowAnswer = 5 * time.Second

// Options configure a Store. The zero value of every field means its
// default.
type Options struct {
	// S3Options are the command line's: endpoint, region, path style,
	// anonymous, and the RemoteOptions all three clouds share, whose
	// Timeout, MaxAttempts and DownAfter apply where Tuning leaves
	// RequestTimeout, MaxAttempts and DownAfter zero (Tuning.Command).
	S3Options storage.S3Options

	// Tuning: attempts, timeouts, the endpoint's health, concurrency,
	// coalescing, pinning, logging. The delay before attempt n+1 is
	// uniform in [0, min(MaxBackoff, 2^(n-1) s)). The Logger also receives
	// slow answers.
	remote.Tuning

	// Credentials replace the default chain (environment, shared files and
	// AWS_PROFILE, web identity, container, IMDS). Ignored with Anonymous.
	Credentials aws.CredentialsProvider

	// SlowAnswer: an attempt still without an answer after this long logs
	// that it is waiting (default 5 s; negative: never).
	SlowAnswer time.Duration

	// uncached: Credentials refresh themselves (a catalog's vended
	// credentials); the SDK's cache would keep a session until it expires.
	uncached bool
}

func (o *Options) setDefaults() {
	o.Command(o.S3Options.RemoteOptions)
	o.SetDefaults()
	if o.SlowAnswer == 0 {
		o.SlowAnswer = DefaultSlowAnswer
	}
}

// Store is a Delta table under an S3 prefix. It implements storage.Storage
// and io.Closer; all methods are safe for concurrent use.
type Store struct {
	client    *s3.Client
	bucket    string
	prefix    string // key prefix of the table: "" or ends in '/'
	loc       string // s3://bucket[/prefix]
	opts      Options
	log       *slog.Logger
	retryer   *retry.Standard
	transport *http.Transport
	sem       chan struct{}
	health    *remote.Health

	// life ends at Close: it cancels every operation in flight.
	life context.Context
	stop context.CancelFunc

	pins remote.Pins[pin]

	probeMu  sync.Mutex
	probed   bool  // the conditional-write probe ran to a verdict
	probeErr error // its verdict: nil, or the refusal

	st remote.Counters
}

var (
	_ storage.Storage = (*Store)(nil)
	_ io.Closer       = (*Store)(nil)
)

// New opens the table at location. It loads the AWS
// configuration the standard way (config.LoadDefaultConfig: environment,
// AWS_PROFILE and shared files, web identity, container credentials, IMDS;
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for the endpoint) and, unless
// Anonymous, retrieves credentials once so that missing credentials fail
// here with a clear message rather than at the first read. It sends no
// request to S3.
func New(ctx context.Context, location string, o Options) (*Store, error) {
	bucket, prefix, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	o.setDefaults()
	s := &Store{
		bucket: bucket,
		prefix: prefix,
		loc:    "s3://" + bucket,
		opts:   o,
		log:    o.Logger,
		sem:    make(chan struct{}, o.MaxConcurrency),
	}
	s.life, s.stop = context.WithCancel(context.Background())
	if prefix != "" {
		s.loc += "/" + strings.TrimSuffix(prefix, "/")
	}
	s.health = remote.NewHealth(remote.HealthConfig{Name: "s3", Location: s.loc, Tuning: o.Tuning, Life: s.life, Probe: s.probe})

	var lo []func(*config.LoadOptions) error
	if o.S3Options.Region != "" {
		lo = append(lo, config.WithRegion(o.S3Options.Region))
	}
	switch {
	case o.S3Options.Anonymous:
		lo = append(lo, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	case o.Credentials != nil:
		lo = append(lo, config.WithCredentialsProvider(o.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the AWS configuration: %w", s.loc, err)
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}

	s.retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = o.MaxAttempts
		so.MaxBackoff = o.MaxBackoff
		// No retry quota: a busy mount in a short outage would otherwise
		// drain it and fail reads at once. MaxConcurrency bounds the load.
		so.RateLimiter = ratelimit.None
		so.Retryables = append(so.Retryables, retry.RetryableHTTPStatusCode{
			Codes: map[int]struct{}{http.StatusTooManyRequests: {}},
		})
	})
	s.transport = remote.NewTransport(o.ConnectTimeout, o.MaxConcurrency)
	hc := &httpClient{s: s, c: &http.Client{Transport: s.transport, Timeout: o.RequestTimeout, CheckRedirect: secret.CheckRedirectAll}}

	s.client = s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.Region = region
		if o.S3Options.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.S3Options.Endpoint)
		}
		so.UsePathStyle = o.S3Options.PathStyle
		so.Retryer = healthRetryer{s.retryer, s.health} // retries are logged by httpClient.Do
		so.HTTPClient = hc
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		so.DisableLogOutputChecksumValidationSkipped = true
		so.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			s.log.Debug("aws-sdk: "+fmt.Sprintf(format, v...), "location", s.loc, "level", string(c))
		})
		so.ClientLogMode = 0
		if o.uncached && !o.S3Options.Anonymous {
			so.Credentials = o.Credentials
		}
	})

	if !o.S3Options.Anonymous {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := cfg.Credentials.Retrieve(cctx)
		cancel()
		if err != nil {
			s.Close()
			return nil, &Error{Location: s.loc, Op: "credentials", Reason: reasonNoCredentials, Err: err, Detail: describe(err)}
		}
		secret.Add(c.SecretAccessKey, c.SessionToken)
	}
	return s, nil
}

// ParseLocation splits s3://bucket/prefix into the bucket and the key
// prefix of the table ("" or ending in '/'). Locations that carry
// credentials, a query or a fragment are refused; the error never repeats
// the credentials.
func ParseLocation(location string) (bucket, prefix string, err error) {
	return remote.ParseBucket(location, "s3", "an", "the AWS credential chain (environment, AWS_PROFILE, instance role)")
}

// Location implements storage.Storage: s3://bucket/prefix, without
// credentials and without a trailing slash.
func (s *Store) Location() string { return s.loc }

// Bucket is the table's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Prefix is the key prefix of the table in its bucket: "" or ending in '/'.
func (s *Store) Prefix() string { return s.prefix }

// Client is the underlying SDK client (path style, retries, counters and the
// concurrency bound of this store apply to it).
func (s *Store) Client() *s3.Client { return s.client }

// Close ends the store: operations in flight fail at once (their attempts,
// backoffs and body reads are cancelled, their connections closed), later
// ones fail with "store closed", the endpoint probe stops, and idle
// connections are closed. A mount closes its store when it unmounts, so
// that requests stuck on a dead or stalled endpoint do not hold the
// unmount. Close may be called more than once.
func (s *Store) Close() error {
	s.stop()
	s.health.Close()
	s.transport.CloseIdleConnections()
	return nil
}

func (s *Store) fullKey(key string) string { return s.prefix + key }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Stats are a store's counters since it was opened.
type Stats = remote.Stats

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats { return s.st.Snapshot(s.pins.Len()) }

// Service names the store in a mount's statistics (remote.Reporter).
func (s *Store) Service() string { return "s3" }
