package sharing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/internal/httpjson"
	"github.com/deltafs/deltafs/snapshot"
)

// Client calls the sharing server for one table: Query Table Version and
// Read Data from a Table, in the delta response format.
type Client struct {
	base  string // endpoint + /shares/{share}/schemas/{schema}/tables/{table}
	token string
	hc    *http.Client
}

// NewClient is a client for the table n of profile p.
func NewClient(p Profile, n Name, hc *http.Client) *Client {
	base := p.Endpoint + "/shares/" + url.PathEscape(n.Share) + "/schemas/" + url.PathEscape(n.Schema) + "/tables/" + url.PathEscape(n.Table)
	return &Client{base: base, token: p.BearerToken, hc: hc}
}

// APIError is a server's error answer: its status and
// {"errorCode", "message"} body.
type APIError struct{ httpjson.APIError }

// TableWide: a refused token or a missing table is about the whole table.
func (e *APIError) TableWide() bool { return e.Denied() }

// capabilities is the delta-sharing-capabilities header: the delta
// response format and the reader features deltafs reads.
func capabilities() string {
	var fs []string
	for f := range snapshot.SupportedReaderFeatures {
		fs = append(fs, strings.ToLower(f))
	}
	slices.Sort(fs)
	return "responseformat=delta;readerfeatures=" + strings.Join(fs, ",")
}

// Version is Query Table Version: the table's current version.
func (c *Client) Version(ctx context.Context) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, c.base+"/version", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	v, err := strconv.ParseInt(resp.Header.Get("Delta-Table-Version"), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("the server's Delta-Table-Version %q is not a version", resp.Header.Get("Delta-Table-Version"))
	}
	return v, nil
}

// Response is a query's answer in the delta format.
type Response struct {
	Version  int64           // Delta-Table-Version
	Protocol json.RawMessage // deltaProtocol
	Metadata json.RawMessage // deltaMetadata
	Location string          // metaData.location ("" when not given)
	Files    []File
}

// File is one file line: a delta single action whose path is a
// pre-signed URL.
type File struct {
	ID                  string          `json:"id"`
	Version             *int64          `json:"version"`
	Timestamp           *int64          `json:"timestamp"`
	ExpirationTimestamp *int64          `json:"expirationTimestamp"`
	DeltaSingleAction   json.RawMessage `json:"deltaSingleAction"`
}

type responseLine struct {
	Protocol *struct {
		DeltaProtocol json.RawMessage `json:"deltaProtocol"`
	} `json:"protocol"`
	MetaData *struct {
		DeltaMetadata json.RawMessage `json:"deltaMetadata"`
		Version       *int64          `json:"version"`
		Location      string          `json:"location"`
		AccessModes   []string        `json:"accessModes"`
	} `json:"metaData"`
	File      *File `json:"file"`
	Add       any   `json:"add"`
	EndStream *struct {
		ErrorMessage string `json:"errorMessage"`
	} `json:"endStreamAction"`
	// Top-level EndStreamAction fields (the specification's example).
	ErrorMessage string `json:"errorMessage"`
}

// maxResponse bounds a query's answer (a line per data file).
const maxResponse = 4 << 30

// Query is Read Data from a Table: the table's files as of version (nil:
// the current version).
func (c *Client) Query(ctx context.Context, version *int64) (*Response, error) {
	body := []byte("{}")
	if version != nil {
		body = []byte(fmt.Sprintf(`{"version":%d}`, *version))
	}
	resp, err := c.do(ctx, http.MethodPost, c.base+"/query", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{Version: -1}
	if h := resp.Header.Get("Delta-Table-Version"); h != "" {
		v, err := strconv.ParseInt(h, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("the server's Delta-Table-Version %q is not a version", h)
		}
		out.Version = v
	}
	if caps := strings.ToLower(resp.Header.Get("delta-sharing-capabilities")); caps != "" && !strings.Contains(caps, "responseformat=delta") {
		return nil, errors.New("the server answered in the parquet response format: deltafs reads the delta format (responseformat=delta, Delta Sharing servers since delta-sharing-spark 3.1)")
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxResponse))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		var l responseLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("line %d of the answer is not JSON: %v", n, err)
		}
		switch {
		case l.Protocol != nil:
			if len(l.Protocol.DeltaProtocol) == 0 {
				return nil, errors.New("the server answered in the parquet response format: deltafs reads the delta format (responseformat=delta, Delta Sharing servers since delta-sharing-spark 3.1)")
			}
			out.Protocol = l.Protocol.DeltaProtocol
		case l.MetaData != nil:
			if len(l.MetaData.DeltaMetadata) == 0 {
				return nil, fmt.Errorf("line %d: metaData without deltaMetadata", n)
			}
			if l.MetaData.AccessModes != nil && !contains(l.MetaData.AccessModes, "url") {
				return nil, fmt.Errorf("the table is shared for directory-based access only (accessModes %v): deltafs reads through pre-signed URLs", l.MetaData.AccessModes)
			}
			// A historical metaData (with a version) only comes with
			// startingVersion, which deltafs does not send; the first
			// one describes the snapshot.
			if out.Metadata == nil {
				out.Metadata = l.MetaData.DeltaMetadata
				out.Location = l.MetaData.Location
			}
		case l.File != nil:
			if len(l.File.DeltaSingleAction) == 0 {
				return nil, fmt.Errorf("line %d: file without deltaSingleAction", n)
			}
			out.Files = append(out.Files, *l.File)
		case l.EndStream != nil && l.EndStream.ErrorMessage != "":
			return nil, fmt.Errorf("the server failed the query: %s", c.redact(l.EndStream.ErrorMessage))
		case l.ErrorMessage != "":
			return nil, fmt.Errorf("the server failed the query: %s", c.redact(l.ErrorMessage))
		case l.Add != nil:
			return nil, errors.New("the server answered in the parquet response format: deltafs reads the delta format (responseformat=delta, Delta Sharing servers since delta-sharing-spark 3.1)")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the answer: %v", cleanNetErr(err))
	}
	if out.Protocol == nil || out.Metadata == nil {
		return nil, errors.New("the answer has no protocol or metaData line")
	}
	return out, nil
}

// do sends one API request with the token and the capabilities, and turns
// a non-2xx answer into an *APIError. Transient failures (5xx, a request
// that did not get through) are tried 3 times.
func (c *Client) do(ctx context.Context, method, u string, body []byte) (*http.Response, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("delta-sharing-capabilities", capabilities())
		if body != nil {
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last = fmt.Errorf("the sharing server cannot be reached: %v", cleanNetErr(err))
			continue
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		ae := &APIError{*httpjson.Decode(resp.StatusCode, b, "errorCode")}
		ae.Message = c.redact(oneLine(ae.Message))
		if resp.StatusCode < 500 {
			return nil, ae
		}
		last = ae
	}
	return nil, last
}

// redact removes the token from a server's message, should it echo it.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "***")
}

// cleanNetErr is a transport error without the request's URL (a
// pre-signed URL is a secret; the API's URL is named elsewhere).
func cleanNetErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if strings.EqualFold(s, x) {
			return true
		}
	}
	return false
}
