package unity

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Vended holds one table's vended credentials and renews them before they
// expire, so that a mount serving for days never signs a request with
// expired credentials and never waits for a renewal: a goroutine fetches
// new credentials once two thirds of their lifetime has passed (a 1-hour
// credential is renewed 20 minutes early), logging each renewal at info
// level. A renewal that fails for a transient reason (the catalog
// unreachable, 5xx) is retried every few seconds while the old
// credentials last; once they have expired, Credentials fails (requests
// fail with EIO, naming the cause) until a renewal succeeds.
//
// A renewal the catalog refuses (401, 403, 404: the grant was revoked, the
// token expired, the table dropped) is logged once as a warning, and from
// then on Credentials fails at once with that refusal, so the next reads
// fail with EIO instead of waiting for the old credentials to expire. The
// goroutine keeps asking every minute, and reads work again once the
// catalog vends again.
type Vended struct {
	fetch func(ctx context.Context) (storage.Credentials, error)
	table string
	log   *slog.Logger

	mu      sync.Mutex
	cur     storage.Credentials
	issued  time.Time
	refused error // the catalog's refusal, sticky until a renewal works
	lastErr error // the latest transient failure

	stop context.CancelFunc
	done chan struct{}
}

// RetryInterval is the pause between renewals that failed transiently;
// RefusedInterval between attempts after a refusal.
var (
	RetryInterval   = 2 * time.Second
	RefusedInterval = time.Minute
)

// NewVended fetches the first credentials (an error here fails the open)
// and starts renewing them. Close stops it.
func NewVended(ctx context.Context, table string, log *slog.Logger, fetch func(ctx context.Context) (storage.Credentials, error)) (*Vended, error) {
	if log == nil {
		log = slog.Default()
	}
	v := &Vended{fetch: fetch, table: table, log: log, done: make(chan struct{})}
	c, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.cur, v.issued = c, time.Now()
	v.log.Debug("unity catalog: credentials vended", "table", table, "credentials", c.String())
	life, stop := context.WithCancel(context.Background())
	v.stop = stop
	go v.run(life)
	return v, nil
}

// Close stops the renewals.
func (v *Vended) Close() {
	v.stop()
	<-v.done
}

// Credentials implements storage.CredentialSource.
func (v *Vended) Credentials(ctx context.Context) (storage.Credentials, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.refused != nil {
		return storage.Credentials{}, fmt.Errorf("Unity Catalog refuses read credentials (%w)", v.refused)
	}
	if time.Now().Before(v.cur.Expires) {
		return v.cur, nil
	}
	cause := "renewal pending"
	if v.lastErr != nil {
		cause = v.lastErr.Error()
	}
	return storage.Credentials{}, fmt.Errorf("the credentials Unity Catalog vended expired at %s and could not be renewed (%s)", v.cur.Expires.UTC().Format(time.RFC3339), cause)
}

// renewAt is when the current credentials are due for renewal.
func (v *Vended) renewAt() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.refused != nil {
		return time.Now().Add(RefusedInterval)
	}
	if v.lastErr != nil {
		return time.Now().Add(RetryInterval)
	}
	life := v.cur.Expires.Sub(v.issued)
	return v.issued.Add(life * 2 / 3)
}

func (v *Vended) run(ctx context.Context) {
	defer close(v.done)
	for {
		t := time.NewTimer(time.Until(v.renewAt()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		c, err := v.fetch(fctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		v.mu.Lock()
		switch {
		case err == nil:
			wasRefused := v.refused != nil
			v.cur, v.issued, v.refused, v.lastErr = c, time.Now(), nil, nil
			v.mu.Unlock()
			msg := "unity catalog: renewed the vended credentials"
			if wasRefused {
				msg = "unity catalog: the catalog vends credentials again; reads work again"
			}
			v.log.Info(msg, "table", v.table, "credentials", c.String())
		case IsDenied(err):
			first := v.refused == nil
			v.refused, v.lastErr = err, nil
			v.mu.Unlock()
			if first {
				v.log.Warn("unity catalog: the catalog refuses to renew read credentials (grant revoked?); reads of this table fail with EIO until it vends again", "table", v.table, "cause", err.Error())
			}
		default:
			first := v.lastErr == nil
			v.lastErr = err
			v.mu.Unlock()
			level := slog.LevelDebug
			if first {
				level = slog.LevelInfo
			}
			v.log.Log(ctx, level, "unity catalog: renewing the vended credentials failed; retrying", "table", v.table, "cause", err.Error())
		}
	}
}
