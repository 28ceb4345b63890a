package unitytest

import (
	"encoding/json"
	"net/http"
	"time"
)

// Tables on GCS: the catalog vends an OAuth access token of its own,
// expiring after Lifetime. fake-gcs-server checks no token, so WrapGCS,
// around its handler, does: a request whose Authorization is not
// "Bearer " and a token the catalog vended is refused 401, as GCS refuses
// an unknown or expired token, and counted (Refused, Expired); accepted
// tokens are counted in SessionsUsed.

// vendGCS makes a token valid until expires.
func (s *Server) vendGCS(expires time.Time) string {
	tok := "ya29.c." + randomHex(40)
	s.mu.Lock()
	s.gcpTokens[tok] = expires
	s.secrets = append(s.secrets, tok)
	s.mu.Unlock()
	return tok
}

// WrapGCS checks every request's bearer token (see above).
func (s *Server) WrapGCS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		tok, bearer := auth[min(len(auth), len("Bearer ")):], len(auth) > len("Bearer ") && auth[:len("Bearer ")] == "Bearer "
		s.mu.Lock()
		expires, ok := s.gcpTokens[tok]
		s.mu.Unlock()
		switch {
		case !bearer || !ok:
			s.Refused.Add(1)
			gcsError(w, "Invalid Credentials")
		case !time.Now().Before(expires):
			s.Expired.Add(1)
			gcsError(w, "Invalid Credentials")
		default:
			s.accept("gcp:" + tok)
			next.ServeHTTP(w, r)
		}
	})
}

func gcsError(w http.ResponseWriter, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 401, "message": message,
		"errors": []map[string]any{{"message": message, "domain": "global", "reason": "authError", "locationType": "header", "location": "Authorization"}}}})
}
