package sharing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
)

func init() { storage.RegisterMatch(IsLocation, Open) }

// Open opens PROFILE.share#share.schema.table.
func Open(ctx context.Context, location string, opts storage.Options) (storage.Storage, error) {
	n, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	p, err := LoadProfile(n.Profile, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), CheckRedirect: secret.CheckRedirect}
	c := NewClient(p, n, hc, opts.Sharing.Timeout)
	st, err := newStore(ctx, location, c, hc, slog.Default())
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			switch ae.Status {
			case 401:
				return nil, fmt.Errorf("%s: the sharing server %s refuses the bearer token of %s (%s)", location, p.Endpoint, n.Profile, ae.Error())
			case 403:
				return nil, fmt.Errorf("%s: permission denied by %s (%s)", location, p.Endpoint, ae.Error())
			case 404:
				return nil, fmt.Errorf("%s: no such shared table at %s (%s)", location, p.Endpoint, ae.Error())
			}
		}
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	slog.Debug("delta sharing: table opened", "table", location, "endpoint", p.Endpoint)
	return st, nil
}
