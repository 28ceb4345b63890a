// Package sharingtest is a Delta Sharing server for tests, following
// PROTOCOL.md of delta-io/delta-sharing for the endpoints deltafs uses:
// Query Table Version (GET .../version) and Read Data from a Table (POST
// .../query, snapshot queries by version or current, responseformat=delta),
// with the real field names, status codes and {"errorCode", "message"}
// error bodies. It serves real tables from a local directory, read with
// deltafs's own log replay (package snapshot), and their files through
// pre-signed URLs: HMAC-signed URLs on an HTTP file handler, valid for a
// short lifetime, so that clients must renew them for real.
//
// For attacks, the file server can be slowed (SetFileDelay) or made to
// serve other bytes than the files' (SetTamper), and the API's or the file
// server's answers can be redirects elsewhere (RedirectAPI, RedirectFiles).
//
// Profiles of shareCredentialsVersion 2 with type oauth_client_credentials
// (EnableOAuth, WriteOAuthProfile) get their tokens from an OAuth 2.0
// token endpoint (RFC 6749, client credentials grant), as the Delta
// Sharing clients of delta-io/delta-sharing read them; PROTOCOL.md
// describes only version 1.
//
// Queries can be answered asynchronously (SetAsync: asyncquery, Get Query
// Info) and in pages (SetPageSize: endStreamAction.nextPageToken).
//
// The listing endpoints (List Shares, List Schemas in a Share, List
// Tables in a Schema, List all Tables in a Share) serve the tables added,
// in pages (list.go).
//
// Deviations: only the endpoints above; queries with startingVersion,
// timestamp or predicates are answered 400 (deltafs sends none of them).
package sharingtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// Prefix is the API's {prefix}.
const Prefix = "/delta-sharing"

// Server is a running sharing server.
type Server struct {
	URL      string // the server, without the prefix
	Endpoint string // URL + Prefix: a profile's endpoint
	Token    string

	lifetime time.Duration
	key      []byte
	history  atomic.Bool
	parquet  atomic.Bool // answer in the parquet format only

	mu     sync.Mutex
	tables map[string]*table // by lower-case share.schema.table

	// Counters of file requests.
	Served  atomic.Int64 // answered with data
	Expired atomic.Int64 // refused: the URL had expired
	Refused atomic.Int64 // refused: a bad signature
	Queries atomic.Int64 // query requests answered 200
	// TableRequests counts the requests to a table's endpoints (version,
	// query, metadata): none while a client only lists.
	TableRequests atomic.Int64
	listing       listing      // list.go
	InFlight      atomic.Int64 // file requests being answered now

	fileDelay atomic.Int64 // nanoseconds every file answer waits
	tamper    atomic.Pointer[func(key string, data []byte) []byte]

	// OAuth (EnableOAuth): tokens issued by the token endpoint, by
	// expiry; TokenRequests counts the endpoint's requests.
	TokenURL      string
	TokenRequests atomic.Int64
	oauth         atomic.Pointer[oauthClient]
	issued        map[string]time.Time // under mu

	// Asynchronous queries and pages (SetAsync, SetPageSize).
	async    atomic.Int64           // polls answered pending; 0: synchronous
	pageSize atomic.Int64           // files a page; 0: one page
	queries  map[string]*asyncQuery // under mu, by queryId
	Polls    atomic.Int64           // Get Query Info requests

	redirectAPI, redirectFiles atomic.Pointer[http.HandlerFunc]
}

// asyncQuery is a submitted asynchronous query: its answer, computed at
// once, and the polls still to be answered pending.
type asyncQuery struct {
	table   string // share.schema.table, lower-case
	header  http.Header
	lines   [][]byte
	pending int
}

// oauthClient is the one client the token endpoint knows.
type oauthClient struct {
	id, secret string
	life       time.Duration
	hook       func(w http.ResponseWriter, r *http.Request) bool
}

// RedirectAPI makes the API answer every request with redirect (a
// handler such as cloudtest.Trap.Redirect); nil stops it.
func (s *Server) RedirectAPI(redirect http.HandlerFunc) { s.redirectAPI.Store(&redirect) }

// RedirectFiles does the same for the file server, once a URL's signature
// is checked (a pre-signed URL that redirects to a CDN).
func (s *Server) RedirectFiles(redirect http.HandlerFunc) { s.redirectFiles.Store(&redirect) }

// redirected answers r with the redirect p holds, if any.
func redirected(p *atomic.Pointer[http.HandlerFunc], w http.ResponseWriter, r *http.Request) bool {
	if h := p.Load(); h != nil && *h != nil {
		(*h)(w, r)
		return true
	}
	return false
}

// SetFileDelay makes every file answer wait d first (a slow object
// store), or the client's request to end.
func (s *Server) SetFileDelay(d time.Duration) { s.fileDelay.Store(int64(d)) }

// SetTamper makes the file server serve tamper(key, bytes) in place of
// each file's bytes (a hostile or broken file server); nil: the files.
func (s *Server) SetTamper(tamper func(key string, data []byte) []byte) {
	if tamper == nil {
		s.tamper.Store(nil)
		return
	}
	s.tamper.Store(&tamper)
}

type table struct {
	dir                 string
	id                  string
	t                   *snapshot.Log
	share, schema, name string // as added (listings)
}

// Start starts a server whose URLs live for lifetime; history is shared
// until SetHistory(false).
func Start(t testing.TB, lifetime time.Duration) *Server {
	s := &Server{lifetime: lifetime, key: randomBytes(32), Token: "dss-" + hex.EncodeToString(randomBytes(16)), tables: map[string]*table{}}
	s.history.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc(Prefix+"/", s.api)
	mux.HandleFunc("/lake/", s.file)
	mux.HandleFunc("/oauth/token", s.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.Endpoint = srv.URL + Prefix
	s.TokenURL = srv.URL + "/oauth/token"
	return s
}

// EnableOAuth makes TokenURL an OAuth 2.0 token endpoint (RFC 6749,
// client credentials grant, the client authenticated by HTTP Basic or by
// client_id and client_secret in the form) that issues bearer tokens
// living life, which the API accepts until they expire, beside Token.
// hook, when not nil, sees each token request first and answers it
// itself when it returns true (an endpoint that fails, stalls or lies).
func (s *Server) EnableOAuth(clientID, secret string, life time.Duration, hook func(w http.ResponseWriter, r *http.Request) bool) {
	s.oauth.Store(&oauthClient{id: clientID, secret: secret, life: life, hook: hook})
}

// SetAsync makes the server honour asyncquery=true in the capabilities
// header (PROTOCOL.md, asyncQuery): a query is answered with a pending
// queryStatus, and Get Query Info (POST .../queries/{queryId}) answers
// pending polls times before the answer; 0 answers every query at once.
func (s *Server) SetAsync(polls int) { s.async.Store(int64(polls)) }

// SetPageSize makes every answer come in pages of n files, each ending in
// an endStreamAction with the nextPageToken of the next (0: one page).
func (s *Server) SetPageSize(n int) { s.pageSize.Store(int64(n)) }

// WriteOAuthProfile writes a profile file of shareCredentialsVersion 2
// and type oauth_client_credentials for this server's token endpoint.
func (s *Server) WriteOAuthProfile(t testing.TB, path, clientID, secret, scope string) {
	b, _ := json.Marshal(map[string]any{"shareCredentialsVersion": 2, "type": "oauth_client_credentials", "endpoint": s.Endpoint + "/",
		"tokenEndpoint": s.TokenURL, "clientId": clientID, "clientSecret": secret, "scope": scope})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.TokenRequests.Add(1)
	c := s.oauth.Load()
	if c == nil {
		http.NotFound(w, r)
		return
	}
	if c.hook != nil && c.hook(w, r) {
		return
	}
	oauthError := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		oauthError(http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		// RFC 6749 2.3.1: the id and secret are form-encoded first.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	switch {
	case r.PostForm.Get("grant_type") != "client_credentials":
		oauthError(http.StatusBadRequest, "unsupported_grant_type")
		return
	case id != c.id || secret != c.secret:
		oauthError(http.StatusUnauthorized, "invalid_client")
		return
	}
	tok := "oat-" + hex.EncodeToString(randomBytes(16))
	s.mu.Lock()
	if s.issued == nil {
		s.issued = map[string]time.Time{}
	}
	s.issued[tok] = time.Now().Add(c.life)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(c.life / time.Second)})
}

// authorized reports whether r carries Token or an unexpired issued token.
func (s *Server) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	if tok == s.Token {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.issued[tok]
	return ok && time.Now().Before(exp)
}

// SetHistory shares the tables' history (version queries) or not.
func (s *Server) SetHistory(on bool) { s.history.Store(on) }

// SetParquetOnly makes the server one that ignores the
// delta-sharing-capabilities header: every query is answered in the
// parquet response format (PROTOCOL.md's default), and a table that needs
// the delta format (deletion vectors, column mapping) is refused.
func (s *Server) SetParquetOnly(on bool) { s.parquet.Store(on) }

// AddTable shares the table in dir as share.schema.name.
func (s *Server) AddTable(t testing.TB, share, schema, name, dir string) {
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A table deltafs cannot read (an unsupported protocol) is shared
	// all the same: its queries fail as the server's 400.
	tb, _ := snapshot.Open(context.Background(), st)
	full := strings.ToLower(share + "." + schema + "." + name)
	s.mu.Lock()
	s.tables[full] = &table{dir: dir, id: hex.EncodeToString(randomBytes(8)), t: tb, share: share, schema: schema, name: name}
	s.mu.Unlock()
}

// WriteProfile writes a profile file for this server with token.
func (s *Server) WriteProfile(t testing.TB, path, token string) {
	b, _ := json.Marshal(map[string]any{"shareCredentialsVersion": 1, "endpoint": s.Endpoint + "/", "bearerToken": token})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	if redirected(&s.redirectAPI, w, r) {
		return
	}
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "The bearer token is missing or incorrect.")
		return
	}
	// shares/{share}/schemas/{schema}/tables/{table}/{version|query}
	// or .../queries/{queryId}
	if esc := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), Prefix+"/"), "/"); len(esc) == 8 && esc[6] == "queries" && r.Method == http.MethodPost {
		full := make([]string, 3)
		for i, e := range []string{esc[1], esc[3], esc[5]} {
			full[i], _ = url.PathUnescape(e)
		}
		s.queryInfo(w, r, strings.ToLower(strings.Join(full, ".")), esc[7])
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, Prefix+"/"), "/")
	if s.listings(w, r, parts) {
		return
	}
	if len(parts) == 7 {
		s.TableRequests.Add(1)
	}
	if len(parts) != 7 || parts[0] != "shares" || parts[2] != "schemas" || parts[4] != "tables" {
		writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "No such endpoint.")
		return
	}
	full := strings.ToLower(parts[1] + "." + parts[3] + "." + parts[5])
	s.mu.Lock()
	tb := s.tables[full]
	s.mu.Unlock()
	if tb == nil {
		writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", fmt.Sprintf("Table %s does not exist in the share.", full))
		return
	}
	if tb.t == nil {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "The table cannot be read by this server.")
		return
	}
	switch {
	case parts[6] == "version" && r.Method == http.MethodGet:
		if r.URL.Query().Has("startingTimestamp") {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "startingTimestamp is not supported by this server.")
			return
		}
		v, err := tb.t.Refresh(r.Context())
		if err != nil {
			writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		w.Header().Set("Delta-Table-Version", strconv.FormatInt(v, 10))
		w.WriteHeader(http.StatusOK)
	case parts[6] == "query" && r.Method == http.MethodPost:
		s.queryPaged(w, r, full, tb)
	default:
		writeError(w, http.StatusMethodNotAllowed, "INVALID_PARAMETER_VALUE", "Method not allowed.")
	}
}

// queryPaged answers Read Data from a Table: at once in one page, or in
// pages, or asynchronously (SetAsync, SetPageSize).
func (s *Server) queryPaged(w http.ResponseWriter, r *http.Request, full string, tb *table) {
	async := s.async.Load() > 0 && strings.Contains(strings.ToLower(r.Header.Get("delta-sharing-capabilities")), "asyncquery=true")
	if !async && s.pageSize.Load() == 0 {
		s.query(w, r, full, tb)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var paging struct {
		PageToken string `json:"pageToken"`
	}
	_ = json.Unmarshal(body, &paging)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.query(rec, r, full, tb)
	if rec.Code != http.StatusOK {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	lines := bytes.SplitAfter(bytes.TrimSpace(rec.Body.Bytes()), []byte("\n"))
	if !async || paging.PageToken != "" {
		s.writePage(w, rec.Header(), lines, paging.PageToken)
		return
	}
	id := "q/" + hex.EncodeToString(randomBytes(8)) // a '/' the client must escape
	s.mu.Lock()
	if s.queries == nil {
		s.queries = map[string]*asyncQuery{}
	}
	s.queries[id] = &asyncQuery{table: full, header: rec.Header(), lines: lines, pending: int(s.async.Load())}
	s.mu.Unlock()
	writePending(w, id)
}

// queryInfo answers Get Query Info.
func (s *Server) queryInfo(w http.ResponseWriter, r *http.Request, full, escaped string) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "The bearer token is missing or incorrect.")
		return
	}
	s.Polls.Add(1)
	id, err := url.PathUnescape(escaped)
	var body struct {
		PageToken string `json:"pageToken"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
	s.mu.Lock()
	q := s.queries[id]
	pending := q != nil && q.table == full && q.pending > 0
	if pending {
		q.pending--
	}
	s.mu.Unlock()
	switch {
	case err != nil || q == nil || q.table != full:
		writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "The queryId is unknown or has expired.")
	case pending:
		writePending(w, id)
	default:
		s.writePage(w, q.header, q.lines, body.PageToken)
	}
}

func writePending(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.Header().Set("delta-sharing-capabilities", "asyncquery=true")
	_ = json.NewEncoder(w).Encode(map[string]any{"queryStatus": map[string]any{"queryId": id, "status": "pending"}})
}

// writePage writes the page of token ("" or "page-K") of an answer whose
// first two lines are its protocol and metaData: they start every page.
func (s *Server) writePage(w http.ResponseWriter, header http.Header, lines [][]byte, token string) {
	k := 0
	if token != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(token, "page-"))
		if err != nil || !strings.HasPrefix(token, "page-") || n < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "The page token is not valid.")
			return
		}
		k = n
	}
	head, files := lines[:min(2, len(lines))], lines[min(2, len(lines)):]
	size := int(s.pageSize.Load())
	if size <= 0 {
		size = max(len(files), 1)
	}
	from := min(k*size, len(files))
	to := min(from+size, len(files))
	for _, h := range []string{"Content-Type", "Delta-Table-Version", "delta-sharing-capabilities"} {
		w.Header().Set(h, header.Get(h))
	}
	w.WriteHeader(http.StatusOK)
	for _, l := range head {
		_, _ = w.Write(bytes.TrimRight(l, "\n"))
		_, _ = w.Write([]byte("\n"))
	}
	for _, l := range files[from:to] {
		_, _ = w.Write(bytes.TrimRight(l, "\n"))
		_, _ = w.Write([]byte("\n"))
	}
	if to < len(files) {
		_ = json.NewEncoder(w).Encode(map[string]any{"endStreamAction": map[string]any{"nextPageToken": fmt.Sprintf("page-%d", k+1)}})
	}
}

func (s *Server) query(w http.ResponseWriter, r *http.Request, full string, tb *table) {
	var body struct {
		Version          *int64          `json:"version"`
		Timestamp        *string         `json:"timestamp"`
		StartingVersion  *int64          `json:"startingVersion"`
		PredicateHints   json.RawMessage `json:"predicateHints"`
		JSONPredicate    json.RawMessage `json:"jsonPredicateHints"`
		LimitHint        *int64          `json:"limitHint"`
		EndingVersion    *int64          `json:"endingVersion"`
		IncludeHistProto *bool           `json:"includeHistoricalProtocol"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "MALFORMED_REQUEST", "The request body is not JSON.")
		return
	}
	parquet := s.parquet.Load()
	if !parquet && !strings.Contains(strings.ToLower(r.Header.Get("delta-sharing-capabilities")), "responseformat=delta") {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "This server answers in responseformat=delta only.")
		return
	}
	if body.StartingVersion != nil || body.Timestamp != nil {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "startingVersion and timestamp are not supported by this server.")
		return
	}
	if body.Version != nil && !s.history.Load() {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Reading table by version or timestamp is not supported because history sharing is not enabled on table: "+full)
		return
	}
	ctx := r.Context()
	v, err := tb.t.Refresh(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
		return
	}
	if body.Version != nil {
		if *body.Version > v || *body.Version < 0 {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("Cannot time travel Delta table to version %d. Available versions: [0, %d].", *body.Version, v))
			return
		}
		v = *body.Version
	}
	snap, err := tb.t.Snapshot(ctx, v)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", err.Error())
		return
	}
	exp := time.Now().Add(s.lifetime).UnixMilli()
	if parquet {
		s.queryParquet(w, body.Version != nil, snap, tb, full, exp)
		return
	}
	var lines []any
	lines = append(lines, map[string]any{"protocol": map[string]any{"deltaProtocol": deltaProtocol(snap.Protocol)}})
	md := map[string]any{"deltaMetadata": snap.Metadata, "location": "s3://lake/" + tb.id, "accessModes": []string{"url"}}
	if body.Version != nil {
		md["version"] = v
	}
	lines = append(lines, map[string]any{"metaData": md})
	for _, f := range snap.Files {
		key, err := snap.FileKey(f.Path)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		add := *f
		add.Path = s.sign(tb.id, key, exp)
		if dv := f.DeletionVector; dv != nil && dv.StorageType != "i" {
			dk, err := dvKey(snap, dv)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
				return
			}
			d := *dv
			d.StorageType, d.PathOrInlineDv = "p", s.sign(tb.id, dk, exp)
			add.DeletionVector = &d
		}
		sum := sha256.Sum256([]byte(f.Path))
		file := map[string]any{"id": hex.EncodeToString(sum[:16]), "expirationTimestamp": exp, "deltaSingleAction": map[string]any{"add": &add}}
		if f.DeletionVector != nil {
			dsum := sha256.Sum256([]byte(f.DeletionVector.UniqueID()))
			file["deletionVectorFileId"] = hex.EncodeToString(dsum[:16])
		}
		if body.Version != nil {
			file["version"] = v
			file["timestamp"] = snap.Timestamp.UnixMilli()
		}
		lines = append(lines, map[string]any{"file": file})
	}
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.Header().Set("Delta-Table-Version", strconv.FormatInt(v, 10))
	w.Header().Set("delta-sharing-capabilities", "responseformat=delta")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, l := range lines {
		_ = enc.Encode(l)
	}
	s.Queries.Add(1)
}

// queryParquet answers a query in the parquet response format.
func (s *Server) queryParquet(w http.ResponseWriter, byVersion bool, snap *snapshot.Snapshot, tb *table, full string, exp int64) {
	for _, f := range []string{"deletionVectors", "columnMapping"} {
		if slices.Contains(snap.Protocol.ReaderFeatures, f) {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Table "+full+" uses "+f+": it can be read in responseformat=delta only.")
			return
		}
	}
	if m := snap.Metadata.Configuration["delta.columnMapping.mode"]; m != "" && m != "none" {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Table "+full+" uses column mapping: it can be read in responseformat=delta only.")
		return
	}
	v := snap.Version
	md := snap.Metadata
	meta := map[string]any{"id": md.ID, "format": map[string]any{"provider": "parquet"}, "schemaString": md.SchemaString,
		"partitionColumns": append([]string{}, md.PartitionColumns...), "configuration": md.Configuration,
		"location": "s3://lake/" + tb.id, "accessModes": []string{"url"}, "numFiles": len(snap.Files)}
	if md.Name != "" {
		meta["name"] = md.Name
	}
	if md.Description != "" {
		meta["description"] = md.Description
	}
	if byVersion {
		meta["version"] = v
	}
	lines := []any{map[string]any{"protocol": map[string]any{"minReaderVersion": 1}}, map[string]any{"metaData": meta}}
	for _, f := range snap.Files {
		if f.DeletionVector != nil {
			writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "a deletion vector in a parquet-format table")
			return
		}
		key, err := snap.FileKey(f.Path)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
			return
		}
		sum := sha256.Sum256([]byte(f.Path))
		pv := f.PartitionValues
		if pv == nil {
			pv = map[string]*string{}
		}
		file := map[string]any{"url": s.sign(tb.id, key, exp), "id": hex.EncodeToString(sum[:16]), "partitionValues": pv,
			"size": f.Size, "expirationTimestamp": exp}
		if f.Stats != "" {
			file["stats"] = f.Stats
		}
		if byVersion {
			file["version"] = v
			file["timestamp"] = snap.Timestamp.UnixMilli()
		}
		lines = append(lines, map[string]any{"file": file})
	}
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.Header().Set("Delta-Table-Version", strconv.FormatInt(v, 10))
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, l := range lines {
		_ = enc.Encode(l)
	}
	s.Queries.Add(1)
}

// deltaProtocol is the protocol action as the log has it: reader (writer)
// features listed, empty or not, from reader version 3 (writer version 7).
func deltaProtocol(p snapshot.Protocol) map[string]any {
	m := map[string]any{"minReaderVersion": p.MinReaderVersion, "minWriterVersion": p.MinWriterVersion}
	if p.MinReaderVersion >= 3 {
		m["readerFeatures"] = append([]string{}, p.ReaderFeatures...)
	}
	if p.MinWriterVersion >= 7 {
		m["writerFeatures"] = append([]string{}, p.WriterFeatures...)
	}
	return m
}

// dvKey is the key of a 'u' or 'p' deletion vector's file.
func dvKey(snap *snapshot.Snapshot, dv *snapshot.DeletionVector) (string, error) {
	if dv.StorageType == "p" {
		return snap.FileKey(dv.PathOrInlineDv)
	}
	s := dv.PathOrInlineDv
	if len(s) < 20 {
		return "", fmt.Errorf("bad deletion vector path %q", s)
	}
	raw, err := z85Decode(s[len(s)-20:])
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])
	if p := s[:len(s)-20]; p != "" {
		return snap.FileKey(p + "/" + name)
	}
	return name, nil
}

const z85Chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

func z85Decode(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)*4/5)
	for i := 0; i+5 <= len(s); i += 5 {
		var v uint32
		for j := 0; j < 5; j++ {
			k := strings.IndexByte(z85Chars, s[i+j])
			if k < 0 {
				return nil, fmt.Errorf("bad z85 %q", s)
			}
			v = v*85 + uint32(k)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// sign is the pre-signed URL of a table's file, valid until exp (Unix ms).
func (s *Server) sign(id, key string, exp int64) string {
	p := "/lake/" + id + "/" + key
	q := url.Values{"X-Expires": {strconv.FormatInt(exp, 10)}, "X-Signature": {s.mac(p, exp)}}
	return s.URL + (&url.URL{Path: p}).EscapedPath() + "?" + q.Encode()
}

func (s *Server) mac(p string, exp int64) string {
	h := hmac.New(sha256.New, s.key)
	fmt.Fprintf(h, "%s\n%d", p, exp)
	return hex.EncodeToString(h.Sum(nil))
}

// file serves a pre-signed URL: 403 once expired or when the signature is
// wrong (as S3 does), else the file with Range support.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	p := path.Clean(r.URL.Path)
	exp, err := strconv.ParseInt(r.URL.Query().Get("X-Expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(s.mac(p, exp)), []byte(r.URL.Query().Get("X-Signature"))) {
		s.Refused.Add(1)
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return
	}
	if time.Now().UnixMilli() > exp {
		s.Expired.Add(1)
		http.Error(w, "AccessDenied: Request has expired", http.StatusForbidden)
		return
	}
	if redirected(&s.redirectFiles, w, r) {
		return
	}
	s.InFlight.Add(1)
	defer s.InFlight.Add(-1)
	if d := time.Duration(s.fileDelay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	rest := strings.TrimPrefix(p, "/lake/")
	id, key, _ := strings.Cut(rest, "/")
	var dir string
	s.mu.Lock()
	for _, tb := range s.tables {
		if tb.id == id {
			dir = tb.dir
		}
	}
	s.mu.Unlock()
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(key)))
	if dir == "" || err != nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	s.Served.Add(1)
	if tamper := s.tamper.Load(); tamper != nil {
		b, err := io.ReadAll(f)
		if err != nil {
			http.Error(w, "InternalError", http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "", fi.ModTime(), bytes.NewReader((*tamper)(key, b)))
		return
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorCode": code, "message": msg})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
