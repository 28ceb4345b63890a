package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	gcs "cloud.google.com/go/storage"
	gax "github.com/googleapis/gax-go/v2"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

func init() {
	remote.Register("gs", func(ctx context.Context, location string, opts storage.Options) (*Store, error) {
		return New(ctx, location, Options{GCSOptions: opts.GCS, Credentials: opts.Credentials})
	})
}

// EmulatorEnv is the environment variable of Google's SDK that points it
// at an emulator (fake-gcs-server): host:port or a URL, no authentication.
const EmulatorEnv = "STORAGE_EMULATOR_HOST"

// Options configure a Store. The zero value of every field means its
// default.
type Options struct {
	// GCSOptions are the command line's: endpoint, anonymous, and the
	// RemoteOptions all three clouds share, whose Timeout, MaxAttempts and
	// DownAfter apply where Tuning leaves RequestTimeout, MaxAttempts and
	// DownAfter zero (Tuning.Command).
	GCSOptions storage.GCSOptions

	// Tuning: attempts, timeouts, the endpoint's health, concurrency,
	// coalescing, pinning, logging. The delay before attempt n+1 is
	// uniform in (0, min(MaxBackoff, 2^(n-1) s)].
	remote.Tuning

	// TokenSource replaces Google's credential chain (application default
	// credentials). Ignored with Anonymous or an emulator.
	TokenSource oauth2.TokenSource

	// Credentials, when set, are a catalog's vended token (see
	// storage.CredentialSource): the only credentials used, asked for
	// every request and not cached here; TokenSource, Google's chain,
	// Anonymous and the emulator's unauthenticated mode are ignored.
	Credentials storage.CredentialSource
}

func (o *Options) setDefaults() {
	o.Command(o.GCSOptions.RemoteOptions)
	o.SetDefaults()
}

// Store is a Delta table under a GCS prefix. It implements storage.Storage,
// storage.RangeReader and io.Closer; all methods are safe for concurrent
// use.
type Store struct {
	client     *gcs.Client
	bucket     *gcs.BucketHandle
	bucketName string
	prefix     string // "" or ends in '/'
	loc        string // gs://bucket[/prefix]
	endpoint   string // scheme://host requests go to, for messages
	opts       Options
	log        *slog.Logger
	transport  *http.Transport
	sem        chan struct{}
	health     *remote.Health

	// life ends at Close: it cancels every operation in flight.
	life context.Context
	stop context.CancelFunc

	pins remote.Pins[pin]

	st remote.Counters
}

// New opens the table at location. Unless Anonymous or an
// emulator, it finds credentials the way Google's libraries do
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default
// credentials, the metadata server) and gets an access token once, so that
// missing or refused credentials fail here with one clear line rather than
// at the first read. It sends no request to the bucket.
func New(ctx context.Context, location string, o Options) (*Store, error) {
	bucket, prefix, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	o.setDefaults()
	s := &Store{
		bucketName: bucket,
		prefix:     prefix,
		loc:        "gs://" + bucket,
		opts:       o,
		log:        o.Logger,
		sem:        make(chan struct{}, o.MaxConcurrency),
	}
	if prefix != "" {
		s.loc += "/" + strings.TrimSuffix(prefix, "/")
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.health = remote.NewHealth(remote.HealthConfig{Name: "gcs", Location: s.loc, Tuning: o.Tuning, Life: s.life, Probe: s.probe})

	endpoint, err := s.endpointOption(o.GCSOptions.Endpoint)
	if err != nil {
		s.Close()
		return nil, err
	}
	emulator := o.GCSOptions.Endpoint == "" && os.Getenv(EmulatorEnv) != ""

	s.transport = remote.NewTransport(o.ConnectTimeout, o.MaxConcurrency)
	var rt http.RoundTripper = &meter{s: s, next: s.transport}
	switch {
	case o.Credentials != nil:
		ts := vendedToken{src: o.Credentials, ctx: s.life}
		// A first token, so that a source with no GCP token fails here.
		if _, err := ts.Token(); err != nil {
			s.Close()
			return nil, s.classify(ctx, "credentials", "", err, 0)
		}
		rt = &oauth2.Transport{Source: ts, Base: rt}
	case !o.GCSOptions.Anonymous && !emulator:
		ts, err := s.tokenSource(ctx, o.TokenSource)
		if err != nil {
			s.Close()
			return nil, err
		}
		rt = &oauth2.Transport{Source: ts, Base: rt}
	}
	hc := &http.Client{Transport: rt, Timeout: o.RequestTimeout, CheckRedirect: secret.CheckRedirectAll}

	// Authentication is the transport's (or none): the SDK must not look
	// for credentials of its own.
	copts := []option.ClientOption{option.WithHTTPClient(hc), option.WithoutAuthentication(), gcs.WithDisabledClientMetrics()}
	if endpoint != "" {
		copts = append(copts, option.WithEndpoint(endpoint))
	}
	s.client, err = gcs.NewClient(ctx, copts...)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %v", s.loc, err)
	}
	s.client.SetRetry(
		gcs.WithMaxAttempts(o.MaxAttempts),
		gcs.WithBackoff(gax.Backoff{Initial: min(time.Second, o.MaxBackoff), Max: o.MaxBackoff, Multiplier: 2}),
		// Every request deltafs sends is safe to repeat: reads, lists, and
		// puts of whole objects (conditional ones are checked, see Put).
		gcs.WithPolicy(gcs.RetryAlways),
		gcs.WithErrorFuncWithContext(s.shouldRetry),
	)
	s.bucket = s.client.Bucket(bucket)
	return s, nil
}

// endpointOption turns --gcs-endpoint (http://host:port, or a full JSON
// API URL) into the SDK's endpoint option, and records where requests go.
func (s *Store) endpointOption(ep string) (string, error) {
	if ep == "" {
		s.endpoint = "https://storage.googleapis.com"
		if h := os.Getenv(EmulatorEnv); h != "" {
			if !strings.Contains(h, "://") {
				h = "http://" + h
			}
			s.endpoint = strings.TrimSuffix(h, "/")
		}
		return "", nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("--gcs-endpoint: want http(s)://host[:port][/storage/v1/]")
	}
	s.endpoint = u.Scheme + "://" + u.Host
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/storage/v1/"
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u.String(), nil
}

// tokenSource finds the credentials (ts, else application default
// credentials) and gets a first token, within 30 s.
func (s *Store) tokenSource(ctx context.Context, ts oauth2.TokenSource) (oauth2.TokenSource, error) {
	// Token requests (service-account keys, user credentials) go through
	// a bounded client, never http.DefaultClient.
	tctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: 30 * time.Second})
	if ts == nil {
		creds, err := google.FindDefaultCredentials(tctx, gcs.ScopeReadWrite)
		if err != nil {
			return nil, &Error{Location: s.loc, Op: "credentials", Reason: reasonNoCredentials, Err: oneLine(err), Detail: describe(err), Wide: true, Permanent: true}
		}
		ts = creds.TokenSource
	}
	type result struct {
		tok *oauth2.Token
		err error
	}
	ch := make(chan result, 1)
	go func() {
		tok, err := ts.Token()
		ch <- result{tok, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return nil, &Error{Location: s.loc, Op: "credentials", Reason: ctx.Err().Error(), Kind: ctx.Err(), Permanent: true}
	case <-time.After(30 * time.Second):
		r.err = errors.New("no token within 30s")
	}
	if r.err != nil {
		return nil, s.tokenError(r.err)
	}
	secret.Add(r.tok.AccessToken)
	return oauth2.ReuseTokenSource(r.tok, ts), nil
}

// ParseLocation splits gs://bucket/prefix into the bucket and the key
// prefix of the table ("" or ending in '/'). Locations that carry
// credentials, a port, a query or a fragment are refused; the error never
// repeats credentials.
func ParseLocation(location string) (bucket, prefix string, err error) {
	return remote.ParseBucket(location, "gs", "a", "Google's credential chain (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, the metadata server)")
}

// Location implements storage.Storage: gs://bucket/prefix.
func (s *Store) Location() string { return s.loc }

// Close ends the store: operations in flight fail at once, later ones fail
// with "store closed", the endpoint probe stops, idle connections are
// closed. A mount closes its store as it unmounts. Close may be called
// more than once.
func (s *Store) Close() error {
	s.stop()
	s.health.Close()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	if s.client != nil {
		// The SDK's Close only releases its own resources.
		_ = s.client.Close()
	}
	return nil
}

func (s *Store) fullKey(key string) string { return s.prefix + key }

// opState follows one operation, with its retries, down to the transport.
type opState = remote.Op

// withOp starts an operation: its context carries the opState, is
// cancelled by Close, and ends after the longest its attempts and backoffs
// may take, so that nothing outlives that bound (a server that answers
// and then stalls every body would otherwise be reopened for ever).
func (s *Store) withOp(ctx context.Context, op, key string) (context.Context, *opState, func()) {
	bound := time.Duration(s.opts.MaxAttempts)*(s.opts.RequestTimeout+s.opts.MaxBackoff) + s.opts.ConnectTimeout
	octx, st, done := remote.WithOp(ctx, s.life, op, key, bound)
	return octx, st, func() {
		done()
		s.st.CountRetries(st.AttemptCount())
	}
}

// shouldRetry is the SDK's retry decision: Google's (408, 429, 5xx,
// resets, refused connections, cut bodies) plus attempt timeouts, never
// after Close nor while the endpoint is down (the probe retries). The
// first retry of a minute is logged at info level.
func (s *Store) shouldRetry(err error, rc *gcs.RetryContext) bool {
	if s.life.Err() != nil || errors.Is(err, context.Canceled) || isVended(err) {
		return false
	}
	// Before Google's test: the message of an *Unreachable may say
	// "connection refused", which that test retries.
	var ue *remote.Unreachable
	if errors.As(err, &ue) || s.health.Check() != nil {
		return false
	}
	var ne net.Error
	// An attempt past RequestTimeout is a timeout (it also matches
	// context.DeadlineExceeded); the SDK stops by itself once the
	// operation's context is done.
	retry := gcs.ShouldRetry(err) || (errors.As(err, &ne) && ne.Timeout())
	if !retry {
		return false
	}
	if rc != nil && rc.Attempt < s.opts.MaxAttempts {
		key, _ := strings.CutPrefix(rc.Object, s.prefix)
		s.health.Notice("gcs: a request failed; retrying", "op", rc.Operation, "key", key,
			"attempt", fmt.Sprintf("%d of %d", rc.Attempt+1, s.opts.MaxAttempts), "cause", describe(err))
	}
	return true
}
