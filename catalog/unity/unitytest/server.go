// Package unitytest is a Unity Catalog server for tests: the endpoints
// deltafs calls (GET /tables/{full_name}, POST
// /temporary-table-credentials, under /api/2.1/unity-catalog, and the
// Delta REST API's loadTable with the ratified commits of catalog-managed
// tables: managed.go), with the
// field names, status codes and error bodies of the OpenAPI specification
// (shared/reference/unity-catalog/all.yaml) and of Unity Catalog OSS's
// errors ({"error_code": "PERMISSION_DENIED", "message": ...}), and an STS
// of its own: the AWS sessions it vends expire after Lifetime, and its S3
// middleware (WrapS3, in front of the tests' gofakes3) checks every
// request's SigV4 signature against the session's secret and refuses an
// unknown key (403 InvalidAccessKeyId), a wrong session token (403
// InvalidToken), a wrong signature (403 SignatureDoesNotMatch) and an
// expired session (400 ExpiredToken), as S3 does. So a client that does not
// renew its credentials fails for real.
//
// Tables on Azure and GCS get what Unity Catalog vends there, by the
// scheme of their storage location: for abfss://, wasbs:// and az:// a
// real SAS for Azurite (VendAzure, AzureProxy: azure.go), for gs:// an
// OAuth token that WrapGCS, around fake-gcs-server, requires (gcs.go).
// Both expire after Lifetime, as the S3 sessions do.
//
// For attacks (hostile.go), the catalog can vend credentials that are dead
// on arrival (SetVendLifetime), fail the next vends (FailVends), accept
// requests and never answer them (SetStall) or answer without end
// (SetEndless); Requests and VendRequests count what a client sent. It can
// also redirect every request elsewhere (RedirectTo) or echo the request's
// token in its refusals (EchoToken) (redirect.go).
package unitytest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Server is the catalog. Its fields are set before the first request.
type Server struct {
	URL      string        // http://127.0.0.1:port (the endpoint to give deltafs)
	Token    string        // the bearer token it accepts
	Lifetime time.Duration // of vended sessions

	// Counters.
	Vended   atomic.Int64 // credentials vended
	Expired  atomic.Int64 // S3 requests refused: expired session
	Refused  atomic.Int64 // S3 requests refused: any other authentication failure
	Accepted atomic.Int64 // S3 requests let through with a vended session
	Loads    atomic.Int64 // loadTable calls answered

	// LoadDelay delays every loadTable answer; LoadStatus, when not 0,
	// answers loadTable with that status and a Delta REST API error, or
	// for 404 as a catalog without the Delta REST API does.
	LoadDelay  atomic.Int64 // nanoseconds
	LoadStatus atomic.Int64

	hostile // hostile.go: modes, and the counters Requests and VendRequests
	listing // list.go: the counter ListRequests, hostile listings

	mu       sync.Mutex
	tables   map[string]*table // by lower-case full name
	byID     map[string]*table
	sessions map[string]*session // by access key id
	admin    bool                // the static test key may reach S3
	adminKey [2]string
	keysUsed map[string]bool // credentials seen on accepted requests (S3 key ids, SAS signatures, tokens)

	azAccount, azKey string               // VendAzure
	sas              map[string]time.Time // vended SAS signatures: expiry
	gcpTokens        map[string]time.Time // vended GCP tokens: expiry
	secrets          []string             // vended SAS tokens and GCP tokens

	redirect http.HandlerFunc // RedirectTo (hostile.go)
	echo     atomic.Bool      // EchoToken
}

type table struct {
	full, id, location string
	revoked            bool
	// managed: catalog-managed, with its ratified unpublished commits
	// and latest version (-1: the answer omits latest-table-version).
	managed bool
	commits []Commit
	latest  int64
}

type session struct {
	secret, token string
	expires       time.Time
}

// Start starts a catalog on 127.0.0.1; t.Cleanup stops it. adminKey and
// adminSecret, the tests' static S3 key pair, may reach S3 through WrapS3
// until CloseAdmin (to upload tables).
func Start(t testing.TB, lifetime time.Duration, adminKey, adminSecret string) *Server {
	s := &Server{
		Token:     "dapi-" + randomHex(16),
		Lifetime:  lifetime,
		tables:    map[string]*table{},
		byID:      map[string]*table{},
		sessions:  map[string]*session{},
		admin:     true,
		adminKey:  [2]string{adminKey, adminSecret},
		keysUsed:  map[string]bool{},
		sas:       map[string]time.Time{},
		gcpTokens: map[string]time.Time{},
	}
	s.hostile.stopped = make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	t.Cleanup(s.stopHostile) // first: stalled handlers leave
	s.URL = hs.URL
	return s
}

// AddTable registers a Delta table at a storage location and returns its
// table_id.
func (s *Server) AddTable(fullName, location string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := &table{full: fullName, id: uuid.NewString(), location: location}
	s.tables[strings.ToLower(fullName)] = tb
	s.byID[tb.id] = tb
	return tb.id
}

// ManagedLocation is where Unity Catalog keeps a managed table:
// s3://bucket/__unitystorage/catalogs/<catalog id>/tables/<uuid>.
func ManagedLocation(bucket string) string {
	return "s3://" + bucket + "/__unitystorage/catalogs/" + uuid.NewString() + "/tables/" + uuid.NewString()
}

// Revoke takes SELECT on the table away: the catalog refuses it with 403
// PERMISSION_DENIED from now on. Sessions already vended stay valid until
// they expire, as STS sessions do.
func (s *Server) Revoke(fullName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables[strings.ToLower(fullName)].revoked = true
}

// CloseAdmin stops S3 from accepting the static test key: from now on
// only vended sessions reach it.
func (s *Server) CloseAdmin() {
	s.mu.Lock()
	s.admin = false
	s.mu.Unlock()
}

// Secrets are every secret the catalog handed out or accepts (its token,
// every vended secret key and session token, SAS token and its signature,
// GCP token), for tests that grep logs.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string{s.Token}, s.secrets...)
	for _, ss := range s.sessions {
		out = append(out, ss.secret, ss.token)
	}
	return out
}

// SessionsUsed is the number of distinct vended credentials (S3
// sessions, SAS tokens, GCP tokens) that accepted requests carried.
func (s *Server) SessionsUsed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keysUsed)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	const prefix = "/api/2.1/unity-catalog"
	if s.misbehave(w, r) || s.redirectOrEcho(w, r) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Invalid or missing authentication token.")
		return
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	switch {
	case r.Method == http.MethodGet && path == "/schemas":
		s.listSchemas(w, r)
	case r.Method == http.MethodGet && path == "/tables":
		s.listTables(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/tables/") && len(r.URL.Path) > len(prefix+"/tables/"):
		s.getTable(w, strings.TrimPrefix(r.URL.Path, prefix+"/tables/"))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/delta/v1/catalogs/"):
		s.loadTable(w, r, strings.TrimPrefix(r.URL.Path, prefix+"/delta/v1/catalogs/"))
	case r.Method == http.MethodPost && path == "/temporary-table-credentials":
		s.vend(w, r)
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "No API found for '"+r.Method+" "+r.URL.Path+"'")
	}
}

func (s *Server) getTable(w http.ResponseWriter, full string) {
	s.mu.Lock()
	tb := s.tables[strings.ToLower(full)]
	s.mu.Unlock()
	if tb == nil {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "Table not found: "+full)
		return
	}
	if tb.revoked {
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", "User does not have USE SCHEMA and SELECT on Table '"+tb.full+"'.")
		return
	}
	parts := strings.SplitN(tb.full, ".", 3)
	writeJSON(w, map[string]any{
		"name": parts[2], "catalog_name": parts[0], "schema_name": parts[1],
		"table_type": "MANAGED", "data_source_format": "DELTA", "columns": []any{},
		"storage_location": tb.location, "table_id": tb.id, "owner": "deltafs",
		"created_at": time.Now().UnixMilli(), "properties": map[string]string{},
	})
}

func (s *Server) vend(w http.ResponseWriter, r *http.Request) {
	if s.vendFailure(w) {
		return
	}
	var req struct {
		TableID   string `json:"table_id"`
		Operation string `json:"operation"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.TableID == "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "table_id is required")
		return
	}
	if req.Operation != "READ" && req.Operation != "READ_WRITE" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Unsupported operation: "+req.Operation)
		return
	}
	s.mu.Lock()
	tb := s.byID[req.TableID]
	if tb == nil {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "NOT_FOUND", "Table not found: "+req.TableID)
		return
	}
	if tb.revoked || req.Operation != "READ" {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", "User does not have SELECT on Table '"+tb.full+"'.")
		return
	}
	loc := tb.location
	s.mu.Unlock()
	// Whole seconds: a SAS's expiry has no fraction, and the catalog
	// reports the expiry the credentials really have.
	expires := time.Now().Add(s.lifetime()).Truncate(time.Second)
	answer := map[string]any{"expiration_time": expires.UnixMilli(), "url": loc}
	scheme, _, _ := strings.Cut(loc, "://")
	switch scheme {
	case "abfss", "abfs", "wasbs", "wasb", "az":
		sasToken, err := s.vendAzure(loc, expires)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "cannot sign a SAS: "+err.Error())
			return
		}
		answer["azure_user_delegation_sas"] = map[string]string{"sas_token": sasToken}
	case "gs":
		answer["gcp_oauth_token"] = map[string]string{"oauth_token": s.vendGCS(expires)}
	default:
		ak := "ASIA" + strings.ToUpper(randomHex(8))
		ss := &session{secret: randomHex(20), token: "FwoGZXIvYXdzE" + randomHex(48), expires: expires}
		s.mu.Lock()
		s.sessions[ak] = ss
		s.mu.Unlock()
		answer["aws_temp_credentials"] = map[string]string{"access_key_id": ak, "secret_access_key": ss.secret, "session_token": ss.token}
	}
	s.Vended.Add(1)
	writeJSON(w, answer)
}

// accept counts a request let through with vended credentials (key: the
// credentials' identity).
func (s *Server) accept(key string) {
	s.Accepted.Add(1)
	s.mu.Lock()
	s.keysUsed[key] = true
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg, "details": []any{}})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
