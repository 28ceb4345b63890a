package sharing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// OAuth profiles (shareCredentialsVersion 2, oauth_client_credentials):
// the token is fetched from the profile's token endpoint, renewed before
// it expires, never shown; an endpoint that fails, stalls, lies or
// redirects fails the request in one line within a bound and is asked at
// a bounded rate.

const (
	testClientID     = "deltafs-test-client"
	testClientSecret = "cs-3b9e61c4f0a2d8e5-secret"
)

// oauthServer is a sharing server sharing one test table whose token
// endpoint issues tokens living life; hook as EnableOAuth's.
func oauthServer(t *testing.T, life time.Duration, hook func(w http.ResponseWriter, r *http.Request) bool) (*sharingtest.Server, string) {
	t.Helper()
	srv := sharingtest.Start(t, time.Minute)
	srv.AddTable(t, "share", "default", "simple", "../../testdata/delta/deltars-simple_table")
	srv.EnableOAuth(testClientID, testClientSecret, life, hook)
	profile := filepath.Join(t.TempDir(), "oauth.share")
	srv.WriteOAuthProfile(t, profile, testClientID, testClientSecret, "sharing")
	return srv, profile
}

// oauthClient is a client of the shared table through profile, logging
// into log.
func oauthClient(t *testing.T, profile string, timeout time.Duration, log *bytes.Buffer) *Client {
	t.Helper()
	p, err := LoadProfile(profile, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(p, Name{Profile: profile, Share: "share", Schema: "default", Table: "simple"}, http.DefaultClient, timeout)
	o := c.cred.(*oauth)
	o.log = slog.New(slog.NewTextHandler(log, nil))
	return c
}

func TestOAuthProfileRenews(t *testing.T) {
	srv, profile := oauthServer(t, 3*time.Second, nil)
	var log bytes.Buffer
	c := oauthClient(t, profile, 5*time.Second, &log)
	ctx := context.Background()
	// Four seconds of requests: the first token is renewed once two
	// thirds of its 3 s have passed, so two or three tokens in all, and
	// never a request refused for an expired token.
	deadline := time.Now().Add(4 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if v, err := c.Version(ctx); err != nil || v < 0 {
			t.Fatalf("request %d: %d, %v", n, v, err)
		}
		n++
		time.Sleep(20 * time.Millisecond)
	}
	if got := srv.TokenRequests.Load(); got < 2 || got > 3 {
		t.Errorf("%d requests over 4 s asked the token endpoint %d times, want 2 or 3 (3 s tokens renewed at 2 s)", n, got)
	}
	if strings.Contains(log.String(), "fails") {
		t.Errorf("renewals that succeed logged a failure: %s", log.String())
	}
}

// An endpoint that refuses the client and echoes its secret, that answers
// garbage, a token of another type, no token, a token already expired,
// an endless body, or a redirect: one line naming the profile and the
// endpoint, without the secret, and nothing sent to where it redirects.
func TestOAuthEndpointHostile(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	cases := map[string]struct {
		answer func(w http.ResponseWriter, r *http.Request)
		want   string
	}{
		"echoes the secret": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + testClientSecret + " for " + r.Header.Get("Authorization")})
		}, "HTTP 401 Unauthorized: invalid_client"},
		"garbage": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{\"access_token\": \n\x00" + testClientSecret))
		}, "cannot parse json"},
		"no token": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"token_type":"Bearer","expires_in":3600}`))
		}, "missing access_token"},
		"another type": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"x","token_type":"mac","expires_in":3600}`))
		}, `type "mac"`},
		"expired": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"x","token_type":"Bearer","expires_in":-60}`))
		}, "expires within"},
		"endless": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"`))
			chunk := bytes.Repeat([]byte("a"), 1<<16)
			for i := 0; i < 64; i++ { // 4 MiB, past the library's 1 MiB bound
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "cannot parse json"},
		"redirect": {func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/token", http.StatusTemporaryRedirect)
		}, "HTTP 307"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, profile := oauthServer(t, time.Hour, func(w http.ResponseWriter, r *http.Request) bool { tc.answer(w, r); return true })
			var log bytes.Buffer
			c := oauthClient(t, profile, 5*time.Second, &log)
			start := time.Now()
			_, err := c.Version(context.Background())
			if err == nil {
				t.Fatal("a request succeeded without a token")
			}
			msg := err.Error()
			for _, want := range []string{tc.want, profile, "/oauth/token"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			basic := base64.StdEncoding.EncodeToString([]byte(testClientID + ":" + testClientSecret))
			if strings.Contains(msg, testClientSecret) || strings.Contains(msg, basic) || strings.Contains(log.String(), testClientSecret) || strings.ContainsAny(msg, "\n\x00") {
				t.Errorf("error or log shows the secret or is not one line: %q; log %q", msg, log.String())
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests: the client's secret followed a redirect", n)
	}
}

// A token endpoint that never answers fails each request within the
// client's timeout; one that keeps failing is asked with back-off, not at
// the rate of the requests, and logs once.
func TestOAuthEndpointDownBacksOff(t *testing.T) {
	var stall atomic.Bool
	stall.Store(true)
	srv, profile := oauthServer(t, time.Hour, func(w http.ResponseWriter, r *http.Request) bool {
		if stall.Load() {
			_ = r.ParseForm() // the body read, the server sees the client leave
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return true
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	var log bytes.Buffer
	c := oauthClient(t, profile, 300*time.Millisecond, &log)
	start := time.Now()
	_, err := c.Version(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") || time.Since(start) > 3*time.Second {
		t.Fatalf("a silent token endpoint: %v after %v, want its timeout within 3 s", err, time.Since(start))
	}
	stall.Store(false)
	srv.TokenRequests.Store(0)
	deadline := time.Now().Add(3500 * time.Millisecond)
	fails := 0
	for time.Now().Before(deadline) {
		if _, err := c.Version(context.Background()); err != nil {
			fails++
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Back-off 1 s, 2 s, 4 s after the first failure: at most 2 more
	// requests in 3.5 s however many reads fail.
	if got := srv.TokenRequests.Load(); got > 2 || fails < 100 {
		t.Errorf("%d failed requests asked the endpoint %d times, want at most 2", fails, got)
	}
	if n := strings.Count(log.String(), "renewing the OAuth token fails"); n != 1 {
		t.Errorf("%d failure lines for %d failed requests, want one: %s", n, fails, log.String())
	}
}

// While renewal fails, the old token serves until it expires; when the
// endpoint recovers, one line says so.
func TestOAuthRenewalFailsThenRecovers(t *testing.T) {
	var failing atomic.Bool
	srv, profile := oauthServer(t, 3*time.Second, func(w http.ResponseWriter, r *http.Request) bool {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	var log bytes.Buffer
	c := oauthClient(t, profile, 5*time.Second, &log)
	ctx := context.Background()
	if _, err := c.Version(ctx); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	time.Sleep(2100 * time.Millisecond) // past renewal, before expiry
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("the old token, still valid, was not used while renewal fails: %v", err)
	}
	if !strings.Contains(log.String(), "renewing the OAuth token fails") {
		t.Errorf("no line says renewal fails: %s", log.String())
	}
	failing.Store(false)
	time.Sleep(1100 * time.Millisecond) // the back-off has passed
	if _, err := c.Version(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "renewed again") {
		t.Errorf("no line says renewal recovered: %s", log.String())
	}
	if n := srv.TokenRequests.Load(); n > 4 {
		t.Errorf("%d token requests", n)
	}
}

// A token the server refuses (revoked) is renewed once and the request
// tried again; a server that refuses every token fails the request.
func TestOAuthRefusedTokenRenewed(t *testing.T) {
	srv, profile := oauthServer(t, time.Hour, nil)
	var log bytes.Buffer
	c := oauthClient(t, profile, 5*time.Second, &log)
	o := c.cred.(*oauth)
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	o.tok = "oat-revoked"
	o.next = time.Time{}
	o.mu.Unlock()
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatalf("a revoked token was not renewed: %v", err)
	}
	if n := srv.TokenRequests.Load(); n != 2 {
		t.Errorf("%d token requests, want 2", n)
	}
}

func TestOAuthProfileChecks(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		profile map[string]any
		want    string
	}{
		"no token endpoint":   {map[string]any{"endpoint": "https://s.example/ds", "clientId": "a", "clientSecret": "b"}, "no tokenEndpoint"},
		"token in clear":      {map[string]any{"endpoint": "https://s.example/ds", "tokenEndpoint": "http://t.example/token", "clientId": "a", "clientSecret": "b"}, "in clear"},
		"token not http":      {map[string]any{"endpoint": "https://s.example/ds", "tokenEndpoint": "file:///etc/passwd", "clientId": "a", "clientSecret": "b"}, "not an http(s) URL"},
		"user in token URL":   {map[string]any{"endpoint": "https://s.example/ds", "tokenEndpoint": "https://u:p@t.example/token", "clientId": "a", "clientSecret": "b"}, "not an http(s) URL"},
		"no client id":        {map[string]any{"endpoint": "https://s.example/ds", "tokenEndpoint": "https://t.example/token", "clientSecret": "b"}, "no clientId"},
		"no client secret":    {map[string]any{"endpoint": "https://s.example/ds", "tokenEndpoint": "https://t.example/token", "clientId": "a"}, "no clientSecret"},
		"another type":        {map[string]any{"type": "basic", "endpoint": "https://s.example/ds"}, `profile type "basic" is not supported`},
		"a type from nowhere": {map[string]any{"type": strings.Repeat("x", 5000), "endpoint": "https://s.example/ds"}, `"...`},
	} {
		p := map[string]any{"shareCredentialsVersion": 2, "type": typeOAuth}
		for k, v := range tc.profile {
			p[k] = v
		}
		b, _ := json.Marshal(p)
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".share")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProfile(path, time.Now())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || len(err.Error()) > 400 {
			t.Errorf("%s: %v, want one short line naming the profile and %q", name, err, tc.want)
		}
	}
}

// A bearer token with an expirationTime: one warning a day ahead, however
// many requests, and a clear error once it has expired.
func TestBearerExpiration(t *testing.T) {
	exp := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	now := exp.Add(-48 * time.Hour)
	var log bytes.Buffer
	b := newCredentials(Profile{BearerToken: "dss-tok", ExpirationTime: exp.Format(time.RFC3339)}, "p.share", nil, time.Second,
		slog.New(slog.NewTextHandler(&log, nil)), func() time.Time { return now }).(*bearer)
	for _, at := range []time.Duration{-48 * time.Hour, -23 * time.Hour, -time.Hour, -time.Second} {
		now = exp.Add(at)
		if tok, err := b.token(context.Background()); tok != "dss-tok" || err != nil {
			t.Fatalf("%v before expiry: %q, %v", -at, tok, err)
		}
	}
	if n := strings.Count(log.String(), "expires soon"); n != 1 || !strings.Contains(log.String(), "2030-01-02T00:00:00Z") {
		t.Errorf("%d warnings, want 1 naming the expiry: %s", n, log.String())
	}
	now = exp.Add(time.Second)
	if _, err := b.token(context.Background()); err == nil || !strings.Contains(err.Error(), "expired at 2030-01-02T00:00:00Z") || !strings.Contains(err.Error(), "p.share") {
		t.Errorf("after expiry: %v", err)
	}
}

// A slow renewal does not stall the requests: while one asks the token
// endpoint, the others go on with the old, still valid token.
func TestOAuthSlowRenewalDoesNotStall(t *testing.T) {
	var slow atomic.Bool
	_, profile := oauthServer(t, 3*time.Second, func(w http.ResponseWriter, r *http.Request) bool {
		if slow.Load() {
			time.Sleep(1500 * time.Millisecond)
		}
		return false
	})
	var log bytes.Buffer
	c := oauthClient(t, profile, 5*time.Second, &log)
	ctx := context.Background()
	if _, err := c.Version(ctx); err != nil {
		t.Fatal(err)
	}
	slow.Store(true)
	time.Sleep(2100 * time.Millisecond)   // renewal due, the token valid for 0.9 s more
	go func() { _, _ = c.Version(ctx) }() // the request that renews
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 5; i++ {
		if _, err := c.Version(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("5 requests took %v while a renewal was in flight: they waited for it", d)
	}
}
