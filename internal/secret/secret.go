package secret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces a secret in a line.
const Mask = "***"

// MaxSecrets bounds the registry (the oldest are forgotten first).
const MaxSecrets = 1024

// minLen: shorter strings are not registered (they would mask ordinary
// words; no token, key or signature is that short).
const minLen = 8

var reg struct {
	mu    sync.RWMutex
	added []string        // in the order added (the oldest is forgotten first)
	set   map[string]bool // added's
	// longest: added, longest first, so that a secret that holds another
	// is masked whole, not around the one it holds.
	longest []string
}

// Add registers secrets for Redact. Empty and very short strings are
// ignored, and so are strings that are not UTF-8 (no token is: masking
// one inside a line could cut a character in two). A SAS token (a query
// string) registers its signature too.
func Add(secrets ...string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.set == nil {
		reg.set = map[string]bool{}
	}
	changed := false
	for _, s := range secrets {
		for _, v := range withParts(s) {
			if len(v) < minLen || !utf8.ValidString(v) || reg.set[v] {
				continue
			}
			changed = true
			reg.set[v] = true
			reg.added = append(reg.added, v)
			if len(reg.added) > MaxSecrets {
				delete(reg.set, reg.added[0])
				reg.added = reg.added[1:]
			}
		}
	}
	if changed {
		reg.longest = slices.Clone(reg.added)
		slices.SortStableFunc(reg.longest, func(a, b string) int { return len(b) - len(a) })
	}
}

// withParts is s and, for a query string, the values of its signature
// parameters, raw and unescaped (a SAS may be printed either way).
func withParts(s string) []string {
	out := []string{s}
	if !strings.Contains(s, "=") {
		return out
	}
	q, err := url.ParseQuery(strings.TrimPrefix(s, "?"))
	if err != nil {
		return out
	}
	for k, vs := range q {
		if signatureParam(k) {
			for _, v := range vs {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	return out
}

func signatureParam(k string) bool {
	switch strings.ToLower(k) {
	case "sig", "signature", "x-amz-signature", "x-amz-security-token", "x-amz-credential",
		"x-goog-signature", "x-goog-credential", "skoid", "sktid":
		return true
	}
	return false
}

// shapes are secrets recognisable without registration: a bearer
// credential (RFC 6750's b64token, 8 characters at least, so that "the
// bearer token" stays a phrase), and the signature and credential
// parameters of a signed URL (S3 and GCS pre-signed URLs, Azure SAS,
// CloudFront).
var shapes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/-]{8,}=*`),
	regexp.MustCompile(`(?i)([?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|x-goog-credential|skoid|sktid)=)[^&\s"'#]+`),
}

// Redact is s without any registered secret and any secret of a known
// shape, each replaced by Mask. Redact(Redact(s)) is Redact(s): masking is
// repeated until nothing changes (a secret that contains the mask could
// appear anew; each pass that masks a registered secret shortens s).
func Redact(s string) string {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	for {
		r := redactOnce(s)
		if r == s {
			return r
		}
		s = r
	}
}

func redactOnce(s string) string {
	for _, v := range reg.longest {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	for _, re := range shapes {
		s = re.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// Error is err with its message redacted; errors.Is and errors.As still
// see the original chain. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := Redact(msg); r != msg {
		return &redacted{msg: r, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// Handler is h with every message and attribute value redacted.
func Handler(h slog.Handler) slog.Handler { return &handler{h} }

type handler struct{ h slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	rs := make([]slog.Attr, len(as))
	for i, a := range as {
		rs[i] = redactAttr(a)
	}
	return &handler{h.h.WithAttrs(rs)}
}

func (h *handler) WithGroup(name string) slog.Handler { return &handler{h.h.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		rs := make([]slog.Attr, len(g))
		for i, x := range g {
			rs[i] = redactAttr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(rs...)}
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Redact(err.Error()))
		}
		return slog.String(a.Key, Redact(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Origin is a URL's scheme://host:port, the port always given.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// ErrRedirect is the cause of a refused redirect.
var ErrRedirect = errors.New("redirect refused")

// CheckRedirect is an http.Client's CheckRedirect: at most 10 redirects,
// never from https to another scheme, and a request that carries
// credentials (an Authorization header) never to another origin.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0]
	from, to := Origin(first.URL), Origin(req.URL)
	if strings.EqualFold(first.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return fmt.Errorf("%w: %s redirected to %s, which is not https", ErrRedirect, from, to)
	}
	if from != to && (first.Header.Get("Authorization") != "" || req.Header.Get("Authorization") != "") {
		return fmt.Errorf("%w: %s redirected to %s, another origin (credentials go only to the origin they are for)", ErrRedirect, from, to)
	}
	return nil
}

// CheckRedirectAll is CheckRedirect for a client whose every request
// carries credentials, some set below the client where CheckRedirect
// cannot see them (an oauth2.Transport, a SigV4 signer): no redirect
// leaves the origin.
func CheckRedirectAll(req *http.Request, via []*http.Request) error {
	if err := CheckRedirect(req, via); err != nil {
		return err
	}
	if from, to := Origin(via[0].URL), Origin(req.URL); from != to {
		return fmt.Errorf("%w: %s redirected to %s, another origin (credentials go only to the origin they are for)", ErrRedirect, from, to)
	}
	return nil
}
