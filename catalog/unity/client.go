package unity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/deltafs/deltafs/internal/httpjson"
	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/dustin/go-humanize"
)

// Client calls the endpoints deltafs needs. Safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
	// Attempts of one call, the first included (transient failures only).
	Attempts int
}

// Bounds of a call: callTimeout per attempt, from the request to the
// answer's last byte; retryPause the longest pause before the second
// attempt (doubling for each later one, jittered). Variables for tests.
var (
	callTimeout = 30 * time.Second
	retryPause  = time.Second
)

// NewClient is a client with a 30 s limit per attempt and 4 attempts. Its
// token is registered with secret.Add (no line prints it) and goes only to
// the catalog's origin: a redirect elsewhere, or from https to http, fails
// the call (secret.CheckRedirect).
func NewClient(cfg Config) *Client {
	secret.Add(cfg.Token)
	return &Client{cfg: cfg, http: &http.Client{Timeout: callTimeout, CheckRedirect: secret.CheckRedirect}, Attempts: 4}
}

// TableInfo is the part of getTable's answer deltafs uses (all.yaml,
// TableInfo).
type TableInfo struct {
	Name             string `json:"name"`
	CatalogName      string `json:"catalog_name"`
	SchemaName       string `json:"schema_name"`
	TableType        string `json:"table_type"`
	DataSourceFormat string `json:"data_source_format"`
	StorageLocation  string `json:"storage_location"`
	TableID          string `json:"table_id"`
}

// TemporaryCredentials is generateTemporaryTableCredentials' answer
// (all.yaml, TemporaryCredentials).
type TemporaryCredentials struct {
	AWS *struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
		SessionToken    string `json:"session_token"`
	} `json:"aws_temp_credentials"`
	Azure *struct {
		SASToken string `json:"sas_token"`
	} `json:"azure_user_delegation_sas"`
	GCP *struct {
		OAuthToken string `json:"oauth_token"`
	} `json:"gcp_oauth_token"`
	ExpirationTime int64  `json:"expiration_time"` // epoch ms
	URL            string `json:"url"`
}

// Storage turns the answer into storage.Credentials.
func (t TemporaryCredentials) Storage() (storage.Credentials, error) {
	c := storage.Credentials{Expires: time.UnixMilli(t.ExpirationTime)}
	if t.AWS != nil {
		secret.Add(t.AWS.SecretAccessKey, t.AWS.SessionToken)
	}
	if t.Azure != nil {
		secret.Add(t.Azure.SASToken)
	}
	if t.GCP != nil {
		secret.Add(t.GCP.OAuthToken)
	}
	switch {
	case t.AWS != nil && t.AWS.AccessKeyID != "":
		c.AWS = &storage.AWSCredentials{AccessKeyID: t.AWS.AccessKeyID, SecretAccessKey: t.AWS.SecretAccessKey, SessionToken: t.AWS.SessionToken}
	case t.Azure != nil && t.Azure.SASToken != "":
		c.AzureSAS = t.Azure.SASToken
	case t.GCP != nil && t.GCP.OAuthToken != "":
		c.GCPToken = t.GCP.OAuthToken
	default:
		return c, errors.New("the catalog vended no credentials (no aws_temp_credentials, azure_user_delegation_sas or gcp_oauth_token)")
	}
	if t.ExpirationTime <= 0 {
		return c, errors.New("the catalog vended credentials without expiration_time")
	}
	return c, nil
}

// APIError is an answer other than 200, its code from error_code.
// Message is the server's, redacted (secret.Redact: a server that echoes
// the request's header would print the token). Denied reports a refusal that retrying cannot
// change: bad token (401), no privilege (403), no such table (404).
type APIError = httpjson.APIError

// IsDenied reports whether err is an APIError that is Denied.
func IsDenied(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Denied()
}

// GetTable is GET /tables/{full_name}.
func (c *Client) GetTable(ctx context.Context, fullName string) (TableInfo, error) {
	var ti TableInfo
	err := c.call(ctx, http.MethodGet, "/tables/"+url.PathEscape(fullName), nil, &ti)
	return ti, err
}

// TemporaryTableCredentials is POST /temporary-table-credentials for READ.
func (c *Client) TemporaryTableCredentials(ctx context.Context, tableID string) (TemporaryCredentials, error) {
	var tc TemporaryCredentials
	body := map[string]string{"table_id": tableID, "operation": "READ"}
	err := c.call(ctx, http.MethodPost, "/temporary-table-credentials", body, &tc)
	return tc, err
}

// LoadTableResponse is the part of the Delta REST API's loadTable answer
// deltafs uses (delta.yaml, DeltaLoadTableResponse).
type LoadTableResponse struct {
	Metadata struct {
		TableUUID  string            `json:"table-uuid"`
		Location   string            `json:"location"`
		Properties map[string]string `json:"properties"`
	} `json:"metadata"`
	// Commits are the ratified commits not yet published, newest first.
	Commits []DeltaCommit `json:"commits"`
	// LatestTableVersion is the latest ratified version (nil: absent).
	LatestTableVersion *int64 `json:"latest-table-version"`
}

// DeltaCommit is one ratified commit (delta.yaml, DeltaCommit). Version
// and FileSize are pointers: the fields are required, and a zero must not
// stand in for an absent one.
type DeltaCommit struct {
	Version   *int64 `json:"version"`
	Timestamp int64  `json:"timestamp"` // in-commit timestamp, epoch ms
	// FileName is the staged commit's name under
	// _delta_log/_staged_commits/.
	FileName string `json:"file-name"`
	FileSize *int64 `json:"file-size"`
}

// CatalogManaged reports whether the catalog says the table is
// catalog-managed: its properties carry delta.feature.catalogManaged, as
// the server derives them from the table's protocol.
func (r LoadTableResponse) CatalogManaged() bool {
	v := strings.ToLower(r.Metadata.Properties["delta.feature.catalogManaged"])
	return v == "supported" || v == "enabled"
}

// LoadTable is the Delta REST API's GET
// /delta/v1/catalogs/{catalog}/schemas/{schema}/tables/{table}.
func (c *Client) LoadTable(ctx context.Context, fullName string) (LoadTableResponse, error) {
	var lt LoadTableResponse
	parts := strings.SplitN(fullName, ".", 3)
	if len(parts) != 3 {
		return lt, fmt.Errorf("%s: want catalog.schema.table", fullName)
	}
	path := "/delta/v1/catalogs/" + url.PathEscape(parts[0]) + "/schemas/" + url.PathEscape(parts[1]) + "/tables/" + url.PathEscape(parts[2])
	err := c.call(ctx, http.MethodGet, path, nil, &lt)
	return lt, err
}

// NoDeltaAPI reports whether err says the catalog does not serve the
// Delta REST API for the table (no such endpoint: 404 other than a
// missing table, 405, 501; or 400 UnsupportedTableFormatException, after
// which delta.yaml says to fall back to the Unity Catalog API).
func NoDeltaAPI(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Status {
	case http.StatusNotFound:
		switch ae.Code {
		case "NoSuchTableException", "NoSuchSchemaException", "NoSuchCatalogException", "NotFoundException":
			return false
		}
		return true
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	case http.StatusBadRequest:
		return ae.Code == "UnsupportedTableFormatException"
	}
	return false
}

// decodeError reads an error answer: Unity Catalog's {"error_code",
// "message"} or the Delta REST API's {"error": {"type", "message"}}.
func decodeError(status int, data []byte) *APIError {
	ae := httpjson.Decode(status, data, "error_code")
	if ae.Code == "" && ae.Message == "" {
		var d struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &d) == nil {
			ae.Code, ae.Message = d.Error.Type, d.Error.Message
		}
	}
	if len(ae.Message) > 300 {
		ae.Message = ae.Message[:300] + "..."
	}
	return ae
}

// call sends one request, retrying connection failures, 429 and 5xx with
// jittered backoff (at most Attempts attempts).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		retry, err := c.once(ctx, method, path, payload, out)
		if err == nil {
			return nil
		}
		if !retry || attempt >= c.Attempts || ctx.Err() != nil {
			if attempt > 1 {
				return fmt.Errorf("%w, after %d attempts", err, attempt)
			}
			return err
		}
		d := time.Duration(rand.Int64N(int64(retryPause) << (attempt - 1)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// isTimeout reports whether err is the client's time limit.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// maxAnswer bounds an answer of the catalog (a table's description or a
// credential: a few KiB).
const maxAnswer = 16 << 20

func (c *Client) once(ctx context.Context, method, path string, payload []byte, out any) (retry bool, err error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.BaseURL()+path, body)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil && isTimeout(err) {
			return true, fmt.Errorf("no answer within %v", c.http.Timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the caller's message already
		}
		err = secret.Error(err)
		return ctx.Err() == nil && !errors.Is(err, secret.ErrRedirect), err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		if ctx.Err() == nil && isTimeout(err) {
			return true, fmt.Errorf("the answer did not come whole within %v", c.http.Timeout)
		}
		return true, fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxAnswer {
		return false, fmt.Errorf("the answer is longer than %s", humanize.IBytes(maxAnswer))
	}
	if resp.StatusCode != http.StatusOK {
		ae := decodeError(resp.StatusCode, data)
		return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, ae
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("not a valid answer: %s", httpjson.Cause(err))
	}
	return false, nil
}

// Bounds of a listing (ListSchemas, ListTables): at most maxListed names
// and maxListPages pages (each answer bounded by maxAnswer), within
// listTimeout for all of them. A catalog that pages without end, or
// lists more, fails the listing. Variables for tests.
var (
	maxListed    = 100_000
	maxListPages = 10_000
	listTimeout  = 5 * time.Minute
)

// listPage is the size of the pages asked for (the specification's
// maximum).
const listPage = 50

// ListSchemas is GET /schemas for the catalog, every page: the names of
// its schemas, in the catalog's order.
func (c *Client) ListSchemas(ctx context.Context, catalog string) ([]string, error) {
	q := url.Values{"catalog_name": {catalog}}
	return c.list(ctx, "/schemas", q, func(data json.RawMessage, next *string) ([]string, error) {
		var page struct {
			Schemas []struct {
				Name        string `json:"name"`
				CatalogName string `json:"catalog_name"`
			} `json:"schemas"`
			NextPageToken *string `json:"next_page_token"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("not a valid answer: %s", httpjson.Cause(err))
		}
		var names []string
		for _, s := range page.Schemas {
			if s.CatalogName != "" && !strings.EqualFold(s.CatalogName, catalog) {
				return nil, fmt.Errorf("the catalog lists schema %q of catalog %q among %s's", s.Name, s.CatalogName, catalog)
			}
			names = append(names, s.Name)
		}
		if page.NextPageToken != nil {
			*next = *page.NextPageToken
		}
		return names, nil
	})
}

// ListTables is GET /tables for the schema, every page: the names of its
// Delta tables (others, such as views, are left out), in the catalog's
// order.
func (c *Client) ListTables(ctx context.Context, catalog, schema string) ([]string, error) {
	q := url.Values{"catalog_name": {catalog}, "schema_name": {schema}}
	return c.list(ctx, "/tables", q, func(data json.RawMessage, next *string) ([]string, error) {
		var page struct {
			Tables        []TableInfo `json:"tables"`
			NextPageToken *string     `json:"next_page_token"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("not a valid answer: %s", httpjson.Cause(err))
		}
		var names []string
		for _, t := range page.Tables {
			if t.CatalogName != "" && !strings.EqualFold(t.CatalogName, catalog) || t.SchemaName != "" && !strings.EqualFold(t.SchemaName, schema) {
				return nil, fmt.Errorf("the catalog lists table %q of %s.%s among %s.%s's", t.Name, t.CatalogName, t.SchemaName, catalog, schema)
			}
			if !strings.EqualFold(t.DataSourceFormat, "DELTA") {
				continue
			}
			names = append(names, t.Name)
		}
		if page.NextPageToken != nil {
			*next = *page.NextPageToken
		}
		return names, nil
	})
}

// list calls path with q and max_results, then with every page_token the
// answers give, until one gives none (or an empty one), within the
// listing's bounds. A token the catalog gave before fails the listing: it
// would page without end.
func (c *Client) list(ctx context.Context, path string, q url.Values, page func(json.RawMessage, *string) ([]string, error)) ([]string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, listTimeout, fmt.Errorf("the listing did not end within %v", listTimeout))
	defer cancel()
	q.Set("max_results", fmt.Sprint(listPage))
	seen := map[string]bool{}
	var names []string
	for pages := 1; ; pages++ {
		var data json.RawMessage
		if err := c.call(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &data); err != nil {
			if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
				return nil, cause
			}
			return nil, err
		}
		next := ""
		got, err := page(data, &next)
		if err != nil {
			return nil, err
		}
		names = append(names, got...)
		switch {
		case len(names) > maxListed:
			return nil, fmt.Errorf("the catalog lists more than %d names", maxListed)
		case next == "":
			return names, nil
		case seen[next]:
			return nil, fmt.Errorf("the catalog gives page token %q twice: its pages would not end", clip(next))
		case pages >= maxListPages:
			return nil, fmt.Errorf("the catalog's listing goes on past %d pages", maxListPages)
		}
		seen[next] = true
		q.Set("page_token", next)
	}
}

// clip shortens s for an error line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
