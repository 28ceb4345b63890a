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
// credential is renewed 20 minutes early), but never sooner than
// MinRenewInterval after the last renewal, logging each renewal at info
// level.
//
// A renewal that fails (the catalog unreachable, 5xx, a refusal) or that
// brings credentials already dead (expiring within MinRenewInterval: past,
// or a millisecond away, by this machine's clock) is tried again after a
// pause that doubles from MinRenewInterval up to MaxRenewBackoff. The old
// credentials are kept while they last; once they have expired,
// Credentials fails (requests fail with EIO, naming the cause) until a
// renewal succeeds. The first failure is logged once as a warning, the
// recovery once at info level; the failures in between at debug level.
//
// A renewal the catalog refuses (401, 403, 404: the grant was revoked, the
// token expired, the table dropped) fails Credentials at once with that
// refusal, so the next reads fail with EIO instead of waiting for the old
// credentials to expire; reads work again once the catalog vends again.
type Vended struct {
	fetch func(ctx context.Context) (storage.Credentials, error)
	table string
	log   *slog.Logger

	mu       sync.Mutex
	cur      storage.Credentials
	issued   time.Time
	failures int       // consecutive failed renewals
	failed   time.Time // when the last one failed
	failErr  error     // its cause
	refused  bool      // the catalog refused it (failErr IsDenied)

	stop context.CancelFunc
	done chan struct{}
}

// MinRenewInterval is the least time between two renewals (credentials
// that live less than that are renewed at this pace, and dead ones are
// refused), and the first pause after a failed one; the pause doubles
// with each failure up to MaxRenewBackoff. Credentials are handed out
// until half of it before they expire, so that a request signed with them
// reaches storage in time.
var (
	MinRenewInterval = time.Second
	MaxRenewBackoff  = time.Minute
)

// deadError is credentials that expire before they could be used.
type deadError struct{ expires time.Time }

func (e *deadError) Error() string {
	return fmt.Sprintf("the catalog vended credentials that expire at %s, less than %v from now: is this machine's clock right?", e.expires.UTC().Format(time.RFC3339Nano), MinRenewInterval)
}

// fetchLive fetches credentials and refuses dead ones.
func (v *Vended) fetchLive(ctx context.Context) (storage.Credentials, error) {
	c, err := v.fetch(ctx)
	if err == nil && !c.Expires.After(time.Now().Add(MinRenewInterval)) {
		return storage.Credentials{}, &deadError{c.Expires}
	}
	return c, err
}

// NewVended fetches the first credentials (an error, or dead credentials,
// fail the open) and starts renewing them. Close stops it.
func NewVended(ctx context.Context, table string, log *slog.Logger, fetch func(ctx context.Context) (storage.Credentials, error)) (*Vended, error) {
	if log == nil {
		log = slog.Default()
	}
	v := &Vended{fetch: fetch, table: table, log: log, done: make(chan struct{})}
	c, err := v.fetchLive(ctx)
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
	if v.refused {
		return storage.Credentials{}, fmt.Errorf("Unity Catalog refuses read credentials (%w)", v.failErr)
	}
	// Not in their last half floor: a request signed now must reach
	// storage before they expire.
	if time.Now().Add(MinRenewInterval / 2).Before(v.cur.Expires) {
		return v.cur, nil
	}
	cause := "renewal pending"
	if v.failErr != nil {
		cause = v.failErr.Error()
	}
	return storage.Credentials{}, fmt.Errorf("the credentials Unity Catalog vended expired at %s and could not be renewed (%s)", v.cur.Expires.UTC().Format(time.RFC3339), cause)
}

// renewAt is when the next renewal is due: two thirds into the current
// credentials' life, at least MinRenewInterval after they came; after a
// failure, the back-off.
func (v *Vended) renewAt() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.failures > 0 {
		return v.failed.Add(backoff(v.failures))
	}
	life := v.cur.Expires.Sub(v.issued)
	return v.issued.Add(max(life*2/3, MinRenewInterval))
}

// backoff is the pause after n consecutive failures (n >= 1):
// MinRenewInterval doubled n-1 times, at most MaxRenewBackoff.
func backoff(n int) time.Duration {
	d := MinRenewInterval
	for i := 1; i < n && d < MaxRenewBackoff; i++ {
		d *= 2
	}
	return min(d, MaxRenewBackoff)
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
		c, err := v.fetchLive(fctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		v.mu.Lock()
		if err == nil {
			failed := v.failures > 0
			v.cur, v.issued, v.failures, v.failErr, v.refused = c, time.Now(), 0, nil, false
			v.mu.Unlock()
			msg := "unity catalog: renewed the vended credentials"
			if failed {
				msg = "unity catalog: renewing the vended credentials works again"
			}
			v.log.Info(msg, "table", v.table, "credentials", c.String())
			continue
		}
		v.failures++
		// A refusal after transient failures is said too: from now on,
		// reads fail at once.
		newlyRefused := IsDenied(err) && !v.refused
		v.failed, v.failErr, v.refused = time.Now(), err, IsDenied(err)
		first, next, expires := v.failures == 1, backoff(v.failures), v.cur.Expires
		v.mu.Unlock()
		switch {
		case newlyRefused:
			v.log.Warn("unity catalog: the catalog refuses to renew read credentials (grant revoked?); reads of this table fail with EIO until it vends again", "table", v.table, "cause", err.Error())
		case first:
			v.log.Warn("unity catalog: renewing the vended credentials fails; retrying with back-off, reads fail with EIO once the credentials expire", "table", v.table, "cause", err.Error(), "expires", expires.UTC().Format(time.RFC3339))
		default:
			v.log.Debug("unity catalog: renewing the vended credentials failed again", "table", v.table, "cause", err.Error(), "retry_in", next)
		}
	}
}
