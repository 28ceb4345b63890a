package unitytest

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// WrapS3 checks every S3 request's SigV4 signature: made with a vended
// session that has not expired (or the admin key until CloseAdmin), else
// refused with S3's error for it.
func (s *Server) WrapS3(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, status, msg := s.checkSigV4(r)
		if code != "" {
			if code == "ExpiredToken" {
				s.Expired.Add(1)
			} else {
				s.Refused.Add(1)
			}
			s3test.WriteError(w, r, status, code, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) checkSigV4(r *http.Request) (code string, status int, msg string) {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return "AccessDenied", 403, "Anonymous access is forbidden for this operation"
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, algo), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 {
		return "AuthorizationHeaderMalformed", 400, "The authorization header is malformed"
	}
	ak, region := scope[0], scope[2]
	s.mu.Lock()
	ss := s.sessions[ak]
	admin := s.admin && ak == s.adminKey[0]
	s.mu.Unlock()
	creds := aws.Credentials{AccessKeyID: ak}
	switch {
	case admin:
		creds.SecretAccessKey = s.adminKey[1]
	case ss == nil:
		return "InvalidAccessKeyId", 403, "The AWS Access Key Id you provided does not exist in our records."
	default:
		creds.SecretAccessKey, creds.SessionToken = ss.secret, ss.token
		if r.Header.Get("X-Amz-Security-Token") != ss.token {
			return "InvalidToken", 403, "The provided token is malformed or otherwise invalid."
		}
		if !time.Now().Before(ss.expires) {
			return "ExpiredToken", 400, "The provided token has expired."
		}
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "AccessDenied", 403, "AWS authentication requires a valid Date or x-amz-date header"
	}
	// Sign a copy holding only the signed headers, with the same secret;
	// the signatures must agree.
	c := r.Clone(r.Context())
	c.Header = http.Header{}
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h == "host" || h == "x-amz-date" || h == "x-amz-security-token" {
			continue
		}
		if vs, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			c.Header[http.CanonicalHeaderKey(h)] = vs
		}
	}
	c.URL = &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(r.Context(), creds, c, r.Header.Get("X-Amz-Content-Sha256"), "s3", region, when); err != nil {
		return "AccessDenied", 403, "signing failed"
	}
	want := c.Header.Get("Authorization")
	if !strings.HasSuffix(want, "Signature="+fields["Signature"]) {
		return "SignatureDoesNotMatch", 403, "The request signature we calculated does not match the signature you provided."
	}
	if !admin {
		s.accept(ak)
	}
	return "", 0, ""
}
