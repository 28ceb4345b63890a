package azstore

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

func init() {
	for _, scheme := range Schemes {
		remote.Register(scheme, func(ctx context.Context, location string, opts storage.Options) (*Store, error) {
			return New(ctx, location, Options{AzureOptions: opts.Azure, Credentials: opts.Credentials})
		})
	}
}

// DefaultRetryDelay is the default of Options.RetryDelay (the other defaults
// are remote's, shared by every backend).
const DefaultRetryDelay = time.Second

// Options configure a Store. The zero value of every field means its
// default.
type Options struct {
	// AzureOptions are the command line's: endpoint, anonymous, and the
	// RemoteOptions all three clouds share, whose Timeout, MaxAttempts and
	// DownAfter apply where Tuning leaves RequestTimeout, MaxAttempts and
	// DownAfter zero (Tuning.Command).
	AzureOptions storage.AzureOptions

	// Tuning: attempts, timeouts, the endpoint's health, concurrency,
	// coalescing, pinning, logging. The Logger also receives the
	// credential source (debug).
	remote.Tuning

	// Credential replaces the identity step of the chain (azidentity's
	// DefaultAzureCredential); connection strings, keys and SAS tokens in
	// the environment still come first.
	Credential azcore.TokenCredential

	// Credentials, when set, are a catalog's vended SAS (see
	// storage.CredentialSource): the only credentials used, read for
	// every request; the environment's, the identity chain and
	// Anonymous are ignored.
	Credentials storage.CredentialSource

	// RetryDelay and MaxBackoff shape the delay before attempt n+1:
	// min(RetryDelay × (2^n − 1), MaxBackoff), jittered by ±20% (the
	// SDK's formula; defaults 1 s and 4 s). A Retry-After answer is obeyed
	// up to MaxBackoff.
	RetryDelay time.Duration
}

func (o *Options) setDefaults() {
	o.Command(o.AzureOptions.RemoteOptions)
	o.SetDefaults()
	if o.RetryDelay <= 0 {
		o.RetryDelay = DefaultRetryDelay
	}
}

// Store is a Delta table under a prefix of an Azure Blob Storage
// container. It implements storage.Storage, storage.RangeReader and
// io.Closer; all methods are safe for concurrent use.
type Store struct {
	client    *container.Client
	where     Location
	loc       string // where.String()
	account   string // the storage account, "" when unknown (a SAS-only connection string)
	endpoint  string // the Blob service URL, without query, for messages
	source    string // where the credentials came from, in words (no secret)
	opts      Options
	log       *slog.Logger
	transport *http.Transport
	sem       chan struct{}
	health    *remote.Health

	// life ends at Close: it cancels every operation in flight.
	life context.Context
	stop context.CancelFunc

	pins remote.Pins[pin]

	st remote.Counters
}

var (
	_ storage.Storage     = (*Store)(nil)
	_ storage.RangeReader = (*Store)(nil)
	_ io.Closer           = (*Store)(nil)
)

// New opens the table at location. It resolves the account,
// endpoint and credentials (see the package documentation) and, for an
// Azure identity, gets a token once, so that missing credentials fail here
// with a clear message rather than at the first read. It sends no request
// to the storage account.
func New(ctx context.Context, location string, o Options) (*Store, error) {
	where, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	o.setDefaults()
	s := &Store{
		where: where,
		loc:   where.String(),
		opts:  o,
		log:   o.Logger,
		sem:   make(chan struct{}, o.MaxConcurrency),
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.health = remote.NewHealth(remote.HealthConfig{Name: "azure", Location: s.loc, Tuning: o.Tuning, Life: s.life, Probe: s.probe})
	s.transport = remote.NewTransport(o.ConnectTimeout, o.MaxConcurrency)
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.log.Debug("azure: store opened", "location", s.loc, "endpoint", s.endpoint, "credentials", s.source)
	return s, nil
}

// Location implements storage.Storage: the location as given, normalised,
// never with credentials.
func (s *Store) Location() string { return s.loc }

// Container is the table's container; Account its storage account ("" when
// only a SAS connection string named the endpoint); Prefix the key prefix
// of the table ("" or ending in '/'); Endpoint the Blob service URL.
func (s *Store) Container() string { return s.where.Container }
func (s *Store) Account() string   { return s.account }
func (s *Store) Prefix() string    { return s.where.Prefix }
func (s *Store) Endpoint() string  { return s.endpoint }

// Client is the SDK's container client (this store's retries, counters,
// timeouts and concurrency bound apply to it).
func (s *Store) Client() *container.Client { return s.client }

// Close ends the store: operations in flight fail at once (their
// attempts, backoffs and body reads are cancelled), later ones fail, the
// endpoint probe stops, and idle connections are closed. Close may be
// called more than once.
func (s *Store) Close() error {
	s.stop()
	s.health.Close()
	s.transport.CloseIdleConnections()
	return nil
}

func (s *Store) fullKey(key string) string { return s.where.Prefix + key }

// Stats are a store's counters since it was opened.
type Stats = remote.Stats

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats { return s.st.Snapshot(s.pins.Len()) }

// Service names the store in a mount's statistics (remote.Reporter).
func (s *Store) Service() string { return "azure" }
