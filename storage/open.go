package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deltafs/deltafs/internal/httpjson"
)

// Options configure backends that need more than a location.
type Options struct {
	S3    S3Options
	Azure AzureOptions
	GCS   GCSOptions
	// Sharing is for Delta Sharing locations (PROFILE.share#...).
	Sharing SharingOptions
	// Catalog reaches a catalog for locations that name a table
	// (uc://catalog.schema.table).
	Catalog CatalogOptions
	// Credentials, when set, are the only credentials a cloud backend
	// uses: a catalog sets them to its vended credentials before it opens
	// the table's storage location (see CredentialSource).
	Credentials CredentialSource
}

// CatalogOptions are the flags for catalog locations ("" : from the
// environment or the catalog's configuration file).
type CatalogOptions struct {
	Endpoint string // the catalog server (https://host)
	Token    string // a bearer token
	Profile  string // a profile of ~/.databrickscfg
}

// RemoteOptions are the flags the three object stores (S3, Azure, GCS)
// share; each one's options embed them. A backend applies each where its
// own tuning (storage/remote.Tuning) leaves the field zero.
type RemoteOptions struct {
	// Timeout bounds one attempt of a request (0: the backend's default).
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one request, the first included
	// (0: the backend's default).
	MaxAttempts int
	// DownAfter is how long attempts may fail to reach the endpoint before
	// it is declared down and requests fail at once until it answers
	// again (0: the backend's default; negative: never).
	DownAfter time.Duration
}

// SetRetries sets MaxAttempts from a count of retries, as the command line
// gives it (--s3-retries, --azure-retries, --gcs-retries): the first
// attempt, then n more.
func (r *RemoteOptions) SetRetries(n int) { r.MaxAttempts = n + 1 }

// S3Options are the flags for s3:// locations (see the S3 backend).
type S3Options struct {
	Endpoint  string // custom endpoint URL (also AWS_ENDPOINT_URL_S3)
	Region    string
	PathStyle bool
	Anonymous bool
	RemoteOptions
}

// AzureOptions are the flags for abfss://, az:// and wasbs:// locations
// (see the Azure backend, storage/azstore).
type AzureOptions struct {
	// Endpoint is the Blob service URL of the account
	// (https://account.blob.core.chinacloudapi.cn, or an emulator's
	// http://127.0.0.1:10000/devstoreaccount1); default: the connection
	// string's BlobEndpoint, else derived from the location.
	Endpoint  string
	Anonymous bool // no credentials (public containers)
	RemoteOptions
}

// SharingOptions are the flags for Delta Sharing locations (see
// storage/sharing).
type SharingOptions struct {
	// Timeout bounds a request's pauses: until the answer's headers and
	// between two reads of its body (a query's whole answer: ten times
	// it; a data file's ranged GET: once). 0: the backend's default.
	Timeout time.Duration
}

// GCSOptions are the flags for gs:// locations (see the GCS backend).
type GCSOptions struct {
	// Endpoint overrides the JSON API endpoint (http://host:port, for
	// fake-gcs-server and private endpoints); requests stay authenticated
	// unless Anonymous. STORAGE_EMULATOR_HOST works as with Google's SDK:
	// that endpoint, without authentication.
	Endpoint  string
	Anonymous bool
	RemoteOptions
}

// Opener opens a location with a URL scheme, such as s3://.
type Opener func(ctx context.Context, location string, opts Options) (Storage, error)

var (
	openers  = map[string]Opener{}
	catalogs = map[string]bool{} // schemes that name a table in a catalog
)

// Register makes a scheme ("s3") available to Open. Backends call it from init.
func Register(scheme string, o Opener) { openers[scheme] = o }

// RegisterCatalog is Register for a scheme whose locations name a table in
// a catalog (uc://catalog.schema.table) rather than the place of its
// files: such a location is never a table's storage location
// (CheckStorageLocation).
func RegisterCatalog(scheme string, o Opener) {
	Register(scheme, o)
	catalogs[scheme] = true
}

// CheckStorageLocation says why location, which a catalog gave as the
// place of a table's files, is not one: a catalog's location (uc://, which
// would send the open back to a catalog, or to itself), a location a
// backend claimed (a Delta Sharing PROFILE.share#...), a scheme no backend
// reads, or a local path that is not absolute. nil: a file:// URL, an
// absolute path, or a URL of a storage backend's scheme (s3://, gs://,
// abfss://, ...). The error does not repeat the location.
func CheckStorageLocation(location string) error {
	if Claimed(location) {
		return errors.New("a shared table's location is not a storage location")
	}
	i := strings.Index(location, "://")
	if i <= 0 {
		if !filepath.IsAbs(location) {
			return errors.New("not a URL of a storage deltafs reads, nor an absolute path")
		}
		return nil
	}
	switch scheme := location[:i]; {
	case scheme == "file":
		if !filepath.IsAbs(strings.TrimPrefix(location, "file://")) {
			return errors.New("a file:// URL must hold an absolute path (file:///path)")
		}
		return nil
	case catalogs[scheme]:
		return fmt.Errorf("a %s:// location names a catalog's table, not a storage location", scheme)
	case openers[scheme] == nil:
		return fmt.Errorf("%s is not a scheme of a storage deltafs reads (%s)", httpjson.Quote(scheme, 32), strings.Join(storageSchemes(), ", "))
	}
	return nil
}

// storageSchemes are the schemes of storage locations, sorted, file first.
func storageSchemes() []string {
	var out []string
	for s := range openers {
		if !catalogs[s] {
			out = append(out, s+"://")
		}
	}
	slices.Sort(out)
	return append([]string{"file://"}, out...)
}

// maxOpenDepth bounds how many opens one Open may nest (a catalog's table
// opens its storage location: 2). Past it the open fails, so that no chain
// of locations leading to locations runs without end.
const maxOpenDepth = 4

type depthKey struct{}

// matcher claims locations that have no scheme of their own (Delta
// Sharing's PROFILE.share#share.schema.table).
type matcher struct {
	match func(location string) bool
	open  Opener
}

var matchers []matcher

// RegisterMatch makes Open hand the locations match accepts to o, before
// any scheme or local path is considered. Backends call it from init.
func RegisterMatch(match func(location string) bool, o Opener) {
	matchers = append(matchers, matcher{match, o})
}

// Open returns the storage for a table location: a local path, a URL
// whose scheme a backend registered, or a location a backend claimed with
// RegisterMatch.
func Open(ctx context.Context, location string, opts Options) (Storage, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= maxOpenDepth {
		return nil, fmt.Errorf("%s: the location is reached through %d others (a catalog's location leading back to catalogs?)", location, depth)
	}
	ctx = context.WithValue(ctx, depthKey{}, depth+1)
	for _, m := range matchers {
		if m.match(location) {
			return m.open(ctx, location, opts)
		}
	}
	if i := strings.Index(location, "://"); i > 0 {
		scheme := location[:i]
		if scheme == "file" {
			return NewLocal(strings.TrimPrefix(location, "file://"))
		}
		o, ok := openers[scheme]
		if !ok {
			return nil, fmt.Errorf("%s: unsupported location scheme %q", location, scheme)
		}
		return o(ctx, location, opts)
	}
	return NewLocal(location)
}

// Claimed reports whether a backend claimed location with RegisterMatch
// (it is then no local path, though it has no scheme).
func Claimed(location string) bool {
	for _, m := range matchers {
		if m.match(location) {
			return true
		}
	}
	return false
}
