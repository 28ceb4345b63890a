package sharing

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/deltafs/deltafs/internal/secret"
)

// credentials give the bearer token of each request: the profile's own,
// or one fetched from an OAuth token endpoint and renewed before it
// expires.
type credentials interface {
	token(ctx context.Context) (string, error)
	// renew is called after the server refused the token: true when a
	// new one may fix it (another token was fetched since, or can be).
	renew(refused string) bool
}

// newCredentials are the credentials of profile p, read from path.
func newCredentials(p Profile, path string, hc *http.Client, timeout time.Duration, log *slog.Logger, now func() time.Time) credentials {
	if p.Type == typeOAuth {
		return newOAuth(p, path, hc, timeout, log, now)
	}
	secret.Add(p.BearerToken)
	b := &bearer{tok: p.BearerToken, path: path, log: log, now: now}
	if p.ExpirationTime != "" {
		b.exp, _ = time.Parse(time.RFC3339Nano, p.ExpirationTime) // checked by LoadProfile
	}
	return b
}

// expiryWarning is how long before a bearer token's expirationTime its
// one warning is logged.
const expiryWarning = 24 * time.Hour

// bearer is a profile's bearer token, with its expirationTime if any.
type bearer struct {
	tok    string
	exp    time.Time
	path   string
	log    *slog.Logger
	now    func() time.Time
	warned sync.Once
}

func (b *bearer) token(context.Context) (string, error) {
	if b.exp.IsZero() {
		return b.tok, nil
	}
	left := b.exp.Sub(b.now())
	if left <= 0 {
		return "", fmt.Errorf("the bearer token of %s expired at %s: ask the provider for a new profile", b.path, b.exp.UTC().Format(time.RFC3339))
	}
	if left < expiryWarning {
		b.warned.Do(func() {
			b.log.Warn("delta sharing: the profile's bearer token expires soon: ask the provider for a new profile",
				"profile", b.path, "expires", b.exp.UTC().Format(time.RFC3339))
		})
	}
	return b.tok, nil
}

func (b *bearer) renew(string) bool { return false }

// OAuth renewal: a token is renewed once two thirds of its life have
// passed, never more often than tokenRenewFloor, and failed renewals back off
// from tokenRenewFloor to tokenRenewCap while the old token, still valid, serves.
const (
	tokenRenewFloor = time.Second
	tokenRenewCap   = time.Minute
)

// oauth is a profile of type oauth_client_credentials: the OAuth 2.0
// client credentials grant (RFC 6749 section 4.4) at the profile's
// tokenEndpoint, the client's id and secret sent as HTTP Basic
// authentication.
type oauth struct {
	cfg     clientcredentials.Config
	hc      *http.Client
	timeout time.Duration // bounds one request to the token endpoint
	path    string
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	tok     string
	expiry  time.Time // zero: the endpoint gave no expires_in
	renewAt time.Time // zero: fetch now
	next    time.Time // no attempt before it (floor and back-off)
	backoff time.Duration
	failing error // the last renewal's error, until one succeeds
	// renewing: a request is asking the endpoint (without o.mu); renewed
	// wakes those that wait for it with no valid token.
	renewing bool
	renewed  *sync.Cond
}

func newOAuth(p Profile, path string, hc *http.Client, timeout time.Duration, log *slog.Logger, now func() time.Time) *oauth {
	cfg := clientcredentials.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, TokenURL: p.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader}
	if p.Scope != "" {
		cfg.Scopes = strings.Fields(p.Scope)
	}
	// The token endpoint is asked without redirects: the client's secret
	// goes to the endpoint the profile names and nowhere else.
	tc := *hc
	tc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// The secret, and the Basic credentials made of it, should the
	// endpoint echo the request's header.
	secret.Add(p.ClientSecret)
	secret.Add(base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(p.ClientID) + ":" + url.QueryEscape(p.ClientSecret))))
	o := &oauth{cfg: cfg, hc: &tc, timeout: timeout, path: path, log: log, now: now}
	o.renewed = sync.NewCond(&o.mu)
	return o
}

func (o *oauth) token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		now := o.now()
		valid := o.valid(now)
		switch {
		case valid && (o.renewAt.IsZero() || now.Before(o.renewAt)):
			return o.tok, nil
		case now.Before(o.next) && valid:
			return o.tok, nil
		case now.Before(o.next):
			return "", o.failing
		case !o.renewing:
		case valid:
			return o.tok, nil // renewed by another request; the old token serves meanwhile
		default:
			o.renewed.Wait() // no token to serve: wait for that renewal
			continue
		}
		break
	}
	// One request at a time asks the endpoint, without holding o.mu:
	// the others go on with the old token while it is valid.
	o.renewing = true
	o.mu.Unlock()
	t, err := o.request(ctx)
	o.mu.Lock()
	o.renewing = false
	o.renewed.Broadcast()
	now := o.now()
	if err = o.apply(t, err, now); err == nil || o.valid(now) {
		return o.tok, nil
	}
	return "", err
}

// valid reports whether the token o holds may still be sent at now.
func (o *oauth) valid(now time.Time) bool {
	return o.tok != "" && (o.expiry.IsZero() || now.Before(o.expiry))
}

// request asks the token endpoint for a token, within o.timeout.
func (o *oauth) request(ctx context.Context) (*oauth2.Token, error) {
	tctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t, err := o.cfg.Token(context.WithValue(tctx, oauth2.HTTPClient, o.hc))
	if err != nil && tctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("no answer within %v", o.timeout)
	}
	return t, err
}

// apply takes the endpoint's answer (t, err) at now: the new token, or
// the failure and its back-off; o.mu is held.
func (o *oauth) apply(t *oauth2.Token, err error, now time.Time) error {
	if err == nil && t.TokenType != "" && !strings.EqualFold(t.Type(), "bearer") {
		err = fmt.Errorf("it gave a token of type %q, not a bearer token", clipped(t.TokenType))
	}
	if err == nil && !t.Expiry.IsZero() && t.Expiry.Sub(now) < tokenRenewFloor {
		err = fmt.Errorf("it gave a token that expires within %v", tokenRenewFloor)
	}
	if err != nil {
		first := o.failing == nil
		o.backoff = min(max(2*o.backoff, tokenRenewFloor), tokenRenewCap)
		o.next = now.Add(o.backoff)
		o.failing = fmt.Errorf("the OAuth token endpoint %s of %s: %s", endpointOf(o.cfg.TokenURL), o.path, o.describe(err))
		if first {
			o.log.Warn("delta sharing: renewing the OAuth token fails; retrying with back-off", "profile", o.path, "error", o.failing.Error(), "retry_in", o.backoff.String())
		}
		return o.failing
	}
	if o.failing != nil {
		o.log.Info("delta sharing: the OAuth token is renewed again", "profile", o.path)
	}
	secret.Add(t.AccessToken)
	o.tok, o.expiry, o.failing, o.backoff = t.AccessToken, t.Expiry, nil, 0
	o.renewAt, o.next = time.Time{}, now.Add(tokenRenewFloor)
	if !t.Expiry.IsZero() {
		o.renewAt = now.Add(max(t.Expiry.Sub(now)*2/3, tokenRenewFloor))
	}
	return nil
}

func (o *oauth) renew(refused string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok != refused {
		return true // renewed since that request was sent
	}
	if o.now().Before(o.next) {
		return false // fetched a moment ago and refused already
	}
	o.renewAt = o.now()
	return true
}

// describe is an error of the token endpoint in one line, without the
// endpoint's answer (it may echo the request) beyond its error code.
func (o *oauth) describe(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s := "HTTP " + re.Response.Status
		if re.ErrorCode != "" {
			s += ": " + clipped(re.ErrorCode)
		}
		if re.ErrorDescription != "" {
			s += ": " + clipped(re.ErrorDescription)
		}
		return o.redact(s)
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return o.redact(cleanNetErr(err).Error())
	}
	return o.redact(oneLine(strings.TrimPrefix(err.Error(), "oauth2: ")))
}

func (o *oauth) redact(s string) string { return secret.Redact(s) }

// clipped is a server's word in one line of at most 200 bytes.
func clipped(s string) string {
	s = oneLine(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// endpointOf is a URL's scheme, host and path, without its query.
func endpointOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}
