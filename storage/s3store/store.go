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

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

func init() {
	remote.Register("s3", func(ctx context.Context, location string, opts storage.Options) (*Store, error) {
		o := Options{S3Options: opts.S3, RequestTimeout: opts.S3.Timeout, MaxAttempts: opts.S3.MaxAttempts, DownAfter: opts.S3.DownAfter}
		if opts.Credentials != nil {
			o.Credentials = vendedAWS{opts.Credentials}
			o.uncached = true
		}
		return NewWithOptions(ctx, location, o)
	})
}

// Defaults of Options.
const (
	DefaultMaxAttempts    = remote.DefaultMaxAttempts
	DefaultMaxBackoff     = remote.DefaultMaxBackoff
	DefaultRequestTimeout = remote.DefaultRequestTimeout
	DefaultMaxConcurrency = remote.DefaultMaxConcurrency
	DefaultCoalesceGap    = remote.DefaultCoalesceGap
	DefaultMaxCoalesce    = remote.DefaultMaxCoalesce
	DefaultConnectTimeout = remote.DefaultConnectTimeout
	DefaultDownAfter      = 10 * time.Second
	DefaultProbeInterval  = 5 * time.Second
	DefaultSlowAnswer     = 5 * time.Second
)

// LastCheckpointKey is the one key of a Delta table that is rewritten in
// place; by default it is never pinned (see Options.Mutable).
const LastCheckpointKey = remote.LastCheckpointKey

// Options configure a Store. The zero value of every field means its
// default.
type Options struct {
	// The CLI's options: endpoint, region, path style, anonymous.
	storage.S3Options

	// Credentials replace the default chain (environment, shared files and
	// AWS_PROFILE, web identity, container, IMDS). Ignored with Anonymous.
	Credentials aws.CredentialsProvider

	// MaxAttempts bounds the attempts of one request, the first included
	// (default 5).
	MaxAttempts int
	// MaxBackoff caps the jittered exponential delay between attempts
	// (default 4 s; the delay before attempt n+1 is uniform in
	// [0, min(MaxBackoff, 2^(n-1) s))).
	MaxBackoff time.Duration
	// RequestTimeout bounds one attempt from sending the request to reading
	// the last byte of its body (default 30 s). A stalled attempt fails with
	// a timeout and is retried.
	RequestTimeout time.Duration
	// ConnectTimeout bounds connecting to the endpoint, TCP and TLS
	// (default 5 s): a host that drops packets fails an attempt in seconds,
	// not after RequestTimeout.
	ConnectTimeout time.Duration
	// DownAfter: when attempts have failed to reach the endpoint (at least
	// two in a row, with no answer since the first was sent) for this long,
	// the endpoint is declared down and every request fails at once until
	// it answers a probe (default 10 s; negative: never declared down). See
	// health.
	DownAfter time.Duration
	// ProbeInterval is how often a down endpoint is probed (default 5 s);
	// a probe attempt is also bounded by it.
	ProbeInterval time.Duration
	// SlowAnswer: an attempt still without an answer after this long logs
	// that it is waiting (default 5 s; negative: never).
	SlowAnswer time.Duration
	// MaxConcurrency bounds the HTTP requests in flight (default 64). A
	// request holds its slot until its body is closed.
	MaxConcurrency int
	// CoalesceGap: ReadRanges reads two ranges with one GET when the gap
	// between them is at most this many bytes (default 64 KiB; negative:
	// only touching or overlapping ranges are merged).
	CoalesceGap int64
	// MaxCoalesce caps the size of one merged GET of ReadRanges (default
	// 16 MiB); a single range larger than this is still read with one GET.
	MaxCoalesce int64
	// Mutable reports keys whose content may legitimately change and that
	// are therefore never pinned (default: LastCheckpointKey only).
	Mutable func(key string) bool
	// Logger receives retries (the first of a minute at info level, the
	// others at debug), slow answers, the endpoint going down (warning)
	// and up (info); default slog.Default().
	// Nothing logged contains credentials.
	Logger *slog.Logger

	// uncached: Credentials refresh themselves (a catalog's vended
	// credentials); the SDK's cache would keep a session until it expires.
	uncached bool
}

func (o *Options) setDefaults() {
	remote.Tuning{MaxAttempts: &o.MaxAttempts, MaxConcurrency: &o.MaxConcurrency, MaxBackoff: &o.MaxBackoff,
		RequestTimeout: &o.RequestTimeout, ConnectTimeout: &o.ConnectTimeout, CoalesceGap: &o.CoalesceGap,
		MaxCoalesce: &o.MaxCoalesce, Mutable: &o.Mutable, Logger: &o.Logger}.SetDefaults()
	if o.DownAfter == 0 {
		o.DownAfter = DefaultDownAfter
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
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
	health    health

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

// New opens the table at location (s3://bucket/prefix/to/table) with the
// CLI's options (their Timeout, MaxAttempts and DownAfter become
// RequestTimeout, MaxAttempts and DownAfter) and default tuning otherwise.
// See NewWithOptions.
func New(ctx context.Context, location string, opts storage.S3Options) (*Store, error) {
	return NewWithOptions(ctx, location, Options{S3Options: opts, RequestTimeout: opts.Timeout, MaxAttempts: opts.MaxAttempts, DownAfter: opts.DownAfter})
}

// NewWithOptions opens the table at location. It loads the AWS
// configuration the standard way (config.LoadDefaultConfig: environment,
// AWS_PROFILE and shared files, web identity, container credentials, IMDS;
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for the endpoint) and, unless
// Anonymous, retrieves credentials once so that missing credentials fail
// here with a clear message rather than at the first read. It sends no
// request to S3.
func NewWithOptions(ctx context.Context, location string, o Options) (*Store, error) {
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
	s.health.s = s
	s.life, s.stop = context.WithCancel(context.Background())
	if prefix != "" {
		s.loc += "/" + strings.TrimSuffix(prefix, "/")
	}

	var lo []func(*config.LoadOptions) error
	if o.Region != "" {
		lo = append(lo, config.WithRegion(o.Region))
	}
	switch {
	case o.Anonymous:
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
	hc := &httpClient{s: s, c: &http.Client{Transport: s.transport, Timeout: o.RequestTimeout}}

	s.client = s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.Region = region
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		so.Retryer = healthRetryer{s.retryer, &s.health} // retries are logged by httpClient.Do
		so.HTTPClient = hc
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		so.DisableLogOutputChecksumValidationSkipped = true
		so.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			s.log.Debug("aws-sdk: "+fmt.Sprintf(format, v...), "location", s.loc, "level", string(c))
		})
		so.ClientLogMode = 0
		if o.uncached && !o.Anonymous {
			so.Credentials = o.Credentials
		}
	})

	if !o.Anonymous {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := cfg.Credentials.Retrieve(cctx)
		cancel()
		if err != nil {
			s.Close()
			return nil, &Error{Location: s.loc, Op: "credentials", Reason: reasonNoCredentials, Err: err}
		}
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
	s.health.close()
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
