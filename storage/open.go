package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Options configure backends that need more than a location.
type Options struct {
	S3  S3Options
	GCS GCSOptions
}

// S3Options are the flags for s3:// locations (see the S3 backend).
type S3Options struct {
	Endpoint  string // custom endpoint URL (also AWS_ENDPOINT_URL_S3)
	Region    string
	PathStyle bool
	Anonymous bool
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

// GCSOptions are the flags for gs:// locations (see the GCS backend).
type GCSOptions struct {
	// Endpoint overrides the JSON API endpoint (http://host:port, for
	// fake-gcs-server and private endpoints); requests stay authenticated
	// unless Anonymous. STORAGE_EMULATOR_HOST works as with Google's SDK:
	// that endpoint, without authentication.
	Endpoint  string
	Anonymous bool
	// Timeout bounds one attempt of a request (0: the backend's default).
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one request, the first included
	// (0: the backend's default).
	MaxAttempts int
}

// Opener opens a location with a URL scheme, such as s3://.
type Opener func(ctx context.Context, location string, opts Options) (Storage, error)

var openers = map[string]Opener{}

// Register makes a scheme ("s3") available to Open. Backends call it from init.
func Register(scheme string, o Opener) { openers[scheme] = o }

// Open returns the storage for a table location: a local path, or a URL
// whose scheme a backend registered.
func Open(ctx context.Context, location string, opts Options) (Storage, error) {
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
