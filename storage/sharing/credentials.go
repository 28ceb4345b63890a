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
	return &oauth{cfg: cfg, hc: &tc, timeout: timeout, path: path, log: log, now: now}
}

func (o *oauth) token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	valid := o.tok != "" && (o.expiry.IsZero() || now.Before(o.expiry))
	if valid && (o.renewAt.IsZero() || now.Before(o.renewAt)) {
		return o.tok, nil
	}
	if now.Before(o.next) {
		if valid {
			return o.tok, nil
		}
		return "", o.failing
	}
	err := o.fetch(ctx, now)
	if err == nil {
		return o.tok, nil
	}
	if valid {
		return o.tok, nil
	}
	return "", err
}

// fetch asks the token endpoint for a token; o.mu is held (one request at
// a time, the others wait for its answer).
func (o *oauth) fetch(ctx context.Context, now time.Time) error {
	tctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t, err := o.cfg.Token(context.WithValue(tctx, oauth2.HTTPClient, o.hc))
	if err != nil && tctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("no answer within %v", o.timeout)
	}
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
