package gcstest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TokenServer is an OAuth 2.0 token endpoint on 127.0.0.1, the token_uri
// of the service-account key files WriteServiceAccount makes: it grants
// Token to every JWT assertion, or refuses them all with invalid_grant
// (a key that was deleted or revoked) when Refuse is set.
type TokenServer struct {
	URL    string
	Token  string
	Refuse atomic.Bool
	Calls  atomic.Int64
}

// StartTokenServer starts a token endpoint that grants token.
func StartTokenServer(t testing.TB, token string) *TokenServer {
	t.Helper()
	ts := &TokenServer{Token: token}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.Calls.Add(1)
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if ts.Refuse.Load() || r.Form.Get("assertion") == "" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": ts.Token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	ts.URL = srv.URL + "/token"
	return ts
}

// ServiceAccount is a service-account key file.
type ServiceAccount struct {
	Path       string // the JSON file: GOOGLE_APPLICATION_CREDENTIALS
	PrivateKey string // its PEM private key (a secret no log may hold)
	KeyID      string // private_key_id
}

// WriteServiceAccount writes a service-account key file (a fresh RSA key)
// whose token_uri is tokenURI.
func WriteServiceAccount(t testing.TB, dir, tokenURI string) ServiceAccount {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sa := ServiceAccount{
		Path:       filepath.Join(dir, "service-account.json"),
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		KeyID:      "0123456789abcdef0123456789abcdef01234567",
	}
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "deltafs-test",
		"private_key_id": sa.KeyID,
		"private_key":    sa.PrivateKey,
		"client_email":   "deltafs-test@deltafs-test.iam.gserviceaccount.com",
		"client_id":      "100000000000000000001",
		"auth_uri":       "https://accounts.google.com/o/oauth2/auth",
		"token_uri":      tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sa.Path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return sa
}

// StartMetadata starts a GCE metadata server on 127.0.0.1 that hands out
// token as the default service account's access token, and returns its
// host:port (GCE_METADATA_HOST).
func StartMetadata(t testing.TB, token string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		switch r.URL.Path {
		case "/computeMetadata/v1/instance/service-accounts/default/token":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
		case "/computeMetadata/v1/project/project-id":
			_, _ = w.Write([]byte("deltafs-test"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// Env points Google's credential chain of this process and its children at
// nothing but what the test sets: no key file, no gcloud configuration, a
// metadata server that refuses connections (never the real one), no
// emulator.
func Env(t testing.TB) {
	t.Helper()
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	for _, v := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}
