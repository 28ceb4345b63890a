package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// reset empties the registry (tests of this package only).
func reset(t testing.TB) {
	reg.mu.Lock()
	reg.added, reg.set, reg.longest = nil, nil, nil
	reg.mu.Unlock()
}

// Every shape of secret deltafs holds is masked where a line prints it:
// registered ones anywhere, the recognisable ones (a bearer credential,
// the signature parameters of a pre-signed or SAS URL) even unregistered.
func TestRedactShapes(t *testing.T) {
	reset(t)
	const (
		ucToken      = "dapi0123456789abcdef0123456789abcdef"
		awsSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		awsSession   = "FwoGZXIvYXdzEJr//////////wEaDKu7+session+token=="
		sas          = "sv=2023-11-03&se=2026-12-04T01%3A00%3A00Z&sr=c&sp=rl&sig=AbC%2Bd%2Fef0123456789%3D"
		gcpToken     = "ya29.a0AfH6SMBexampleexampleexample"
		sharingToken = "dss-0123456789abcdef0123"
	)
	Add(ucToken, awsSecret, awsSession, sas, gcpToken, sharingToken, "", "short")
	for _, c := range []struct{ name, in, gone, keep string }{
		{"echoed bearer", `HTTP 401 UNAUTHENTICATED: Invalid token Bearer ` + ucToken, ucToken, "Invalid token Bearer ***"},
		{"bare token", "token " + ucToken + " refused", ucToken, "token *** refused"},
		{"aws secret key", "secret_access_key=" + awsSecret, awsSecret, "secret_access_key=***"},
		{"aws session token", `"session_token":"` + awsSession + `"`, awsSession, `"session_token":"***"`},
		{"whole SAS", "https://acct.blob.core.windows.net/c/k?" + sas, "AbC", "https://acct.blob.core.windows.net/c/k?***"},
		{"SAS signature alone, escaped", "sig AbC%2Bd%2Fef0123456789%3D", "AbC", "sig ***"},
		{"SAS signature alone, unescaped", "sig AbC+d/ef0123456789=", "AbC", "sig ***"},
		{"gcp token", "oauth2: token " + gcpToken + " expired", gcpToken, "oauth2: token *** expired"},
		{"sharing token", "Bearer " + sharingToken, sharingToken, "Bearer ***"},
		// Unregistered, recognised by shape.
		{"unknown bearer", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo", "eyJhbGci", "Authorization: Bearer ***"},
		{"S3 pre-signed URL", "GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261204%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261204T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=0123456789abcdef0123456789abcdef",
			"0123456789abcdef", "X-Amz-Credential=***&X-Amz-Date=20261204T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=***"},
		{"S3 session token in a URL", "https://b/k?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEXAMPLE&x=1", "IQoJ", "X-Amz-Security-Token=***&x=1"},
		{"GCS signed URL", "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam.gserviceaccount.com&X-Goog-Signature=5f3e0a9b8c7d", "5f3e0a9b", "X-Goog-Credential=***&X-Goog-Signature=***"},
		{"unregistered SAS sig", `Head "https://x.blob.core.windows.net/c/b?se=2026&sig=Zm9vYmFy%3D&sp=r": EOF`, "Zm9vYmFy", "se=2026&sig=***&sp=r"},
		// What is not a secret stays.
		{"phrase", "the sharing server refuses the bearer token of p.share", "", "the sharing server refuses the bearer token of p.share"},
		{"short strings are not registered", "a short line", "", "a short line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := Redact(c.in)
			if c.gone != "" && strings.Contains(out, c.gone) {
				t.Errorf("Redact(%q) = %q, still holds %q", c.in, out, c.gone)
			}
			if !strings.Contains(out, c.keep) {
				t.Errorf("Redact(%q) = %q, want it to hold %q", c.in, out, c.keep)
			}
			if Redact(out) != out {
				t.Errorf("not idempotent: %q then %q", out, Redact(out))
			}
		})
	}
}

// A secret that holds another is masked whole, whichever was added first
// (masking the shorter first would leave the rest of the longer).
func TestRedactNested(t *testing.T) {
	for _, order := range [][]string{{"abcdefgh", "abcdefgh-12345678"}, {"abcdefgh-12345678", "abcdefgh"}} {
		reset(t)
		Add(order...)
		if got := Redact("x abcdefgh-12345678 y"); got != "x *** y" {
			t.Errorf("added %q: %q", order, got)
		}
	}
}

// The registry keeps the latest MaxSecrets secrets.
func TestRegistryBound(t *testing.T) {
	reset(t)
	for i := range MaxSecrets + 10 {
		Add(fmt.Sprintf("secret-%08d", i))
	}
	if n := len(reg.added); n != MaxSecrets || len(reg.longest) != MaxSecrets || len(reg.set) != MaxSecrets {
		t.Fatalf("%d secrets kept, want %d", n, MaxSecrets)
	}
	if got := Redact("secret-00000000 secret-00001033"); got != "secret-00000000 ***" {
		t.Fatalf("%q: the oldest should be forgotten, the newest kept", got)
	}
}

// Error masks the message and keeps the chain.
func TestError(t *testing.T) {
	reset(t)
	Add("dapi-secret-token")
	err := Error(fmt.Errorf("call: %w: Bearer dapi-secret-token", fs.ErrPermission))
	if err.Error() != "call: permission denied: Bearer ***" || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("%q, errors.Is %v", err, errors.Is(err, fs.ErrPermission))
	}
	plain := errors.New("nothing secret")
	if Error(plain) != plain || Error(nil) != nil {
		t.Fatal("an error without a secret should be kept as it is")
	}
}

// Handler masks messages and attributes of every kind, those added with
// With and in groups, and, once it is slog's default, the lines of Go's
// log package (where net/http logs).
func TestHandler(t *testing.T) {
	reset(t)
	const tok = "dapi-handler-token-42"
	Add(tok)
	var buf bytes.Buffer
	l := slog.New(Handler(slog.NewTextHandler(&buf, nil)))
	l.With("with", tok).WithGroup("g").Info("msg "+tok, "s", tok, "err", errors.New("e "+tok),
		"any", []string{tok}, slog.Group("inner", "x", tok), "n", 42)
	old := slog.Default()
	slog.SetDefault(l)
	log.Printf("net/http: Unsolicited response received on idle HTTP channel starting with %q; err=<nil> %s", "body", tok)
	slog.SetDefault(old)
	out := buf.String()
	if strings.Contains(out, tok) || strings.Count(out, Mask) != 7 || !strings.Contains(out, "n=42") || !strings.Contains(out, "Unsolicited") {
		t.Fatalf("%s", out)
	}
}

func req(t *testing.T, raw string, auth bool) *http.Request {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{URL: u, Header: http.Header{}}
	if auth {
		r.Header.Set("Authorization", "Bearer x")
	}
	return r
}

// A request with credentials stays at its origin (scheme, host and port);
// nothing leaves https; a request without credentials (a pre-signed URL)
// may go elsewhere over https. CheckRedirectAll keeps every request at its
// origin.
func TestCheckRedirect(t *testing.T) {
	for _, c := range []struct {
		from, to string
		auth     bool
		want     string // "" allowed, else in the error
		all      string // CheckRedirectAll's
	}{
		{"http://127.0.0.1:1000/a", "http://127.0.0.1:1000/b", true, "", ""},
		{"http://127.0.0.1:1000/a", "http://127.0.0.1:2000/b", true, "http://127.0.0.1:1000 redirected to http://127.0.0.1:2000, another origin", "another origin"},
		{"http://127.0.0.1:1000/a", "http://127.0.0.1:2000/b", false, "", "http://127.0.0.1:1000 redirected to http://127.0.0.1:2000"},
		{"https://uc.example.com/a", "http://uc.example.com/b", true, "https://uc.example.com:443 redirected to http://uc.example.com:80, which is not https", "not https"},
		{"https://uc.example.com/a", "http://uc.example.com/b", false, "not https", "not https"},
		{"https://uc.example.com/a", "https://UC.example.com:443/b", true, "", ""},
		{"https://uc.example.com/a", "https://evil.example.com/b", true, "https://uc.example.com:443 redirected to https://evil.example.com:443", "another origin"},
		{"https://files.example.com/a", "https://cdn.example.net/b", false, "", "another origin"},
	} {
		check := func(name string, f func(*http.Request, []*http.Request) error, want string) {
			err := f(req(t, c.to, c.auth), []*http.Request{req(t, c.from, c.auth)})
			switch {
			case want == "" && err != nil:
				t.Errorf("%s %s -> %s (auth %v): %v, want it followed", name, c.from, c.to, c.auth, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrRedirect)):
				t.Errorf("%s %s -> %s (auth %v): %v, want %q", name, c.from, c.to, c.auth, err, want)
			}
		}
		check("CheckRedirect", CheckRedirect, c.want)
		check("CheckRedirectAll", CheckRedirectAll, c.all)
	}
	via := make([]*http.Request, 10)
	for i := range via {
		via[i] = req(t, "http://127.0.0.1:1000/a", true)
	}
	if err := CheckRedirect(req(t, "http://127.0.0.1:1000/b", true), via); err == nil {
		t.Error("an 11th redirect was followed")
	}
}

// FuzzRedact: after Redact no registered secret appears, a UTF-8 line
// stays UTF-8, and Redact is idempotent.
func FuzzRedact(f *testing.F) {
	f.Add("dapi0123456789abcdef", "sv=1&sig=abc%2Bdefghij", "Invalid token Bearer ")
	f.Add("***xxxxx", "abcdefghij", "Bearer abcdefghijkl ?sig=x&X-Amz-Signature=y")
	f.Add("héllo wörld", "wörld ünd", "€\xe2\x82")
	f.Fuzz(func(t *testing.T, s1, s2, line string) {
		reset(t)
		Add(s1, s2)
		for _, in := range []string{line, line + s1 + line + s2 + line, s2 + s1 + line + s1} {
			out := Redact(in)
			for _, v := range reg.added {
				if strings.Contains(out, v) {
					t.Fatalf("Redact(%q) = %q holds the secret %q", in, out, v)
				}
			}
			if utf8.ValidString(in) && !utf8.ValidString(out) {
				t.Fatalf("Redact(%q) = %q is not UTF-8", in, out)
			}
			if again := Redact(out); again != out {
				t.Fatalf("Redact(%q) = %q, then %q", in, out, again)
			}
		}
	})
}
