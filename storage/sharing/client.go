package sharing

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltafs/deltafs/internal/httpjson"
	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/dustin/go-humanize"
)

// Client calls the sharing server for one table: Query Table Version and
// Read Data from a Table, in the delta response format.
type Client struct {
	endpoint string // the profile's endpoint (the listings' base)
	base     string // endpoint + /shares/{share}/schemas/{schema}/tables/{table}
	cred     credentials
	hc       *http.Client
	// timeout bounds a request's pauses: until its answer's headers, and
	// between two reads of the body; the whole answer must come within
	// answerTimeouts of it (bounds.go).
	timeout  time.Duration
	maxBody  int64 // bounds a query's answer, all its pages (maxResponse)
	maxLine  int   // bounds one line of it (maxLine)
	maxPages int   // bounds its pages (maxPages)
	// maxVersions bounds the versions queried at once (maxVersions).
	maxVersions int64
	// plain: the endpoint is http://, so file URLs may be too. From an
	// https endpoint, only https URLs are read (PROTOCOL.md: "An https
	// url"): an http one would expose the data and the URL on the wire.
	plain bool
}

// NewClient is a client for the table n of profile p; timeout 0 is
// DefaultTimeout. The credentials are registered with secret.Add (no line
// prints them) and the token goes only to the endpoint's origin: whatever hc's CheckRedirect,
// the client's is secret.CheckRedirect.
func NewClient(p Profile, n Name, hc *http.Client, timeout time.Duration) *Client {
	own := *hc
	own.CheckRedirect = secret.CheckRedirect
	hc = &own
	base := p.Endpoint + "/shares/" + url.PathEscape(n.Share) + "/schemas/" + url.PathEscape(n.Schema) + "/tables/" + url.PathEscape(n.Table)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{endpoint: p.Endpoint, base: base, cred: newCredentials(p, n.Profile, hc, timeout, slog.Default(), time.Now), hc: hc, timeout: timeout,
		maxBody: maxResponse, maxLine: maxLine, maxPages: maxPages, maxVersions: maxVersions,
		plain: strings.HasPrefix(strings.ToLower(p.Endpoint), "http://")}
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
	return "responseformat=delta;readerfeatures=" + strings.Join(fs, ",") + ";asyncquery=true"
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
	// PlainURLs: the file URLs may be http:// (the endpoint is).
	PlainURLs bool
}

// File is one file line: a delta single action whose path is a
// pre-signed URL.
type File struct {
	ID                  string          `json:"id"`
	Version             *int64          `json:"version"`
	Timestamp           *int64          `json:"timestamp"`
	ExpirationTimestamp *int64          `json:"expirationTimestamp"`
	DeltaSingleAction   json.RawMessage `json:"deltaSingleAction"`

	// The parquet format's fields (parquetformat.go), made into
	// DeltaSingleAction.
	URL             *string         `json:"url"`
	Size            *int64          `json:"size"`
	PartitionValues json.RawMessage `json:"partitionValues"`
	Stats           *string         `json:"stats"`
}

// metaDataLine is a metaData line: deltaMetadata in the delta format,
// the others in the parquet format.
type metaDataLine struct {
	DeltaMetadata json.RawMessage `json:"deltaMetadata"`
	Version       *int64          `json:"version"`
	Location      string          `json:"location"`
	AccessModes   []string        `json:"accessModes"`
	NumFiles      *int64          `json:"numFiles"`

	ID          *string `json:"id"`
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Format      *struct {
		Provider *string `json:"provider"`
	} `json:"format"`
	SchemaString     *string           `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
}

type responseLine struct {
	Protocol *struct {
		DeltaProtocol    json.RawMessage `json:"deltaProtocol"`
		MinReaderVersion *int64          `json:"minReaderVersion"` // the parquet format
	} `json:"protocol"`
	MetaData  *metaDataLine `json:"metaData"`
	File      *File         `json:"file"`
	Add       any           `json:"add"`
	EndStream *struct {
		ErrorMessage  string `json:"errorMessage"`
		NextPageToken string `json:"nextPageToken"`
	} `json:"endStreamAction"`
	// Top-level EndStreamAction fields (the specification's example).
	ErrorMessage  string       `json:"errorMessage"`
	NextPageToken string       `json:"nextPageToken"`
	QueryStatus   *queryStatus `json:"queryStatus"`
}

// Query is Read Data from a Table: the table's files as of version (nil:
// the current version). The query is submitted asynchronously where the
// server offers it (asyncquery): its status is polled until it succeeds,
// within answerTimeouts timeouts; an answer in pages (an endStreamAction
// with a nextPageToken) is read page by page into one.
func (c *Client) Query(ctx context.Context, version *int64) (*Response, error) {
	// One bound for the whole answer: its polls and its pages together.
	whole := answerTimeouts * c.timeout
	qctx, cancel := context.WithTimeoutCause(ctx, whole, &timeoutError{d: whole, whole: true})
	defer cancel()
	r, err := c.query(qctx, version)
	var te *timeoutError
	if err != nil && ctx.Err() == nil && errors.As(context.Cause(qctx), &te) {
		return nil, te
	}
	return r, err
}

func (c *Client) query(ctx context.Context, version *int64) (*Response, error) {
	q := queryBody{Version: version, IdempotencyKey: idempotencyKey()}
	a := &answer{c: c, out: &Response{Version: -1}, ids: map[string]bool{}, seen: map[string]bool{}}
	u := c.base + "/query"
	p, err := a.page(ctx, u, q)
	if err != nil {
		return nil, err
	}
	if p.status != nil {
		u = c.base + "/queries/" + url.PathEscape(p.status.QueryID)
		wait := pollFirst
		for p.status != nil {
			if err := p.status.check(); err != nil {
				return nil, err
			}
			if d, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(d) {
				return nil, fmt.Errorf("the asynchronous query %s is still pending after %v", shortQuote(p.status.QueryID), answerTimeouts*c.timeout)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, pollMax)
			if p, err = a.page(ctx, u, queryBody{}); err != nil {
				return nil, err
			}
		}
	}
	for pages := 1; p.next != ""; pages++ {
		if a.seen[p.next] {
			return nil, fmt.Errorf("page %d of the answer gives the page token %s again (pages without end)", pages, shortQuote(p.next))
		}
		if pages >= c.maxPages {
			return nil, fmt.Errorf("the answer has more than %d pages", c.maxPages)
		}
		a.seen[p.next] = true
		next := q
		if u != c.base+"/query" {
			next = queryBody{} // Get Query Info takes the token alone
		}
		next.PageToken, next.IdempotencyKey = p.next, ""
		if p, err = a.page(ctx, u, next); err != nil {
			return nil, err
		}
		if p.status != nil {
			return nil, fmt.Errorf("page %d of the answer is a query status", pages+1)
		}
	}
	return a.finish()
}

// Asynchronous queries are polled from pollFirst, doubling to pollMax.
const (
	pollFirst = 50 * time.Millisecond
	pollMax   = 2 * time.Second
)

// queryBody is Read Data from a Table's request body, and Get Query
// Info's (its pageToken only).
type queryBody struct {
	Version        *int64 `json:"version,omitempty"`
	PageToken      string `json:"pageToken,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// idempotencyKey names one submission of a query, so that a retried
// submission maps to the same asynchronous query (PROTOCOL.md).
func idempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// queryStatus is an asynchronous query's status line.
type queryStatus struct {
	QueryID      string `json:"queryId"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
	Message      string `json:"message"`
}

// check fails a status that is not pending.
func (q *queryStatus) check() error {
	switch q.Status {
	case "pending":
		return nil
	case "failed":
		msg := q.ErrorMessage
		if msg == "" {
			msg = q.Message
		}
		return fmt.Errorf("the server failed the asynchronous query: %s", clip(oneLine(msg)))
	}
	return fmt.Errorf("the asynchronous query's status is %s (the protocol knows pending and failed)", shortQuote(q.Status))
}

// answer gathers a query's pages into one Response.
type answer struct {
	c        *Client
	out      *Response
	numFiles *int64
	ids      map[string]bool // the file ids so far
	seen     map[string]bool // the page tokens so far
	bytes    int64           // read so far, against c.maxBody
	lines    int             // lines of the pages so far (errors count across pages)
	pages    int             // pages read so far (a query status is none)
}

// pageEnd is how a page ended: a query status (the query is pending or
// failed), a token for the next page, or neither.
type pageEnd struct {
	status *queryStatus
	next   string
}

// page sends one request of a query and reads its answer into a.
func (a *answer) page(ctx context.Context, u string, q queryBody) (pageEnd, error) {
	c := a.c
	body, _ := json.Marshal(q)
	resp, err := c.do(ctx, http.MethodPost, u, body)
	if err != nil {
		return pageEnd{}, err
	}
	defer resp.Body.Close()
	if h := resp.Header.Get("Delta-Table-Version"); h != "" {
		v, err := strconv.ParseInt(h, 10, 64)
		if err != nil || v < 0 {
			return pageEnd{}, fmt.Errorf("the server's Delta-Table-Version %q is not a version", h)
		}
		if a.out.Version >= 0 && v != a.out.Version {
			return pageEnd{}, fmt.Errorf("the answer's pages are of versions %d and %d", a.out.Version, v)
		}
		a.out.Version = v
	}
	// The scanner hands out the bytes before a read error as a last line:
	// the error, kept by r, is the cause then, not that line's JSON.
	br := &boundedReader{r: resp.Body, max: c.maxBody, read: a.bytes} // one bound for all pages
	r := &stickyReader{r: br}
	defer func() { a.bytes = br.read }()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, c.maxLine)), c.maxLine)
	first := a.lines // lines before this page
	n := first
	defer func() { a.lines = n }()
	page := a.pages + 1
	var end pageEnd
	format := formatUnknown
	var protocol, metadata json.RawMessage // this page's
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		if end.status != nil || end.next != "" {
			return pageEnd{}, fmt.Errorf("line %d of the answer follows its end (a query status or a nextPageToken)", n)
		}
		var l responseLine
		if err := json.Unmarshal(line, &l); err != nil {
			if r.err != nil {
				return pageEnd{}, answerError(r.err, n-1, c.maxLine)
			}
			return pageEnd{}, fmt.Errorf("line %d of the answer: %s", n, httpjson.Cause(err))
		}
		if (l.Protocol != nil) && (l.MetaData != nil || l.File != nil) || l.MetaData != nil && l.File != nil {
			// PROTOCOL.md: "It must contain only ONE of the above fields."
			return pageEnd{}, fmt.Errorf("line %d of the answer holds more than one of protocol, metaData and file", n)
		}
		switch {
		case l.QueryStatus != nil:
			if n != first+1 {
				return pageEnd{}, fmt.Errorf("line %d of the answer: a query status after other lines", n)
			}
			if l.QueryStatus.QueryID == "" || len(l.QueryStatus.QueryID) > 1024 {
				return pageEnd{}, errors.New("the asynchronous query's status has no queryId, or one longer than 1 KiB")
			}
			end.status = l.QueryStatus
		case l.Protocol != nil:
			if protocol != nil {
				return pageEnd{}, fmt.Errorf("line %d of the answer: a second protocol", n)
			}
			if len(l.Protocol.DeltaProtocol) == 0 {
				// The parquet format: the server did not take (or
				// ignored) responseformat=delta.
				p, err := parquetProtocol(l.Protocol.MinReaderVersion)
				if err != nil {
					return pageEnd{}, fmt.Errorf("line %d of the answer: %v", n, err)
				}
				protocol, format = p, formatParquet
			} else if !isObject(l.Protocol.DeltaProtocol) {
				return pageEnd{}, fmt.Errorf("line %d of the answer: deltaProtocol is not a JSON object", n)
			} else {
				protocol, format = l.Protocol.DeltaProtocol, formatDelta
			}
			if a.out.Protocol != nil && !bytes.Equal(a.out.Protocol, protocol) {
				return pageEnd{}, fmt.Errorf("line %d of the answer: page %d has another protocol than the first page", n, page)
			}
		case l.MetaData != nil && format == formatParquet:
			if len(l.MetaData.DeltaMetadata) != 0 {
				return pageEnd{}, fmt.Errorf("line %d of the answer: a delta-format metaData in a parquet-format answer", n)
			}
			if metadata != nil {
				continue // a historical one: the first describes the snapshot
			}
			md, err := parquetMetadata(l.MetaData)
			if err != nil {
				return pageEnd{}, fmt.Errorf("line %d of the answer: %v", n, err)
			}
			if err := checkAccess(l.MetaData); err != nil {
				return pageEnd{}, err
			}
			if err := a.metadata(md, l.MetaData); err != nil {
				return pageEnd{}, fmt.Errorf("line %d of the answer: page %d %v", n, page, err)
			}
			metadata = md
		case l.MetaData != nil:
			if len(l.MetaData.DeltaMetadata) == 0 {
				return pageEnd{}, fmt.Errorf("line %d: metaData without deltaMetadata", n)
			}
			if !isObject(l.MetaData.DeltaMetadata) {
				return pageEnd{}, fmt.Errorf("line %d of the answer: deltaMetadata is not a JSON object", n)
			}
			// A historical metaData (with a version) only comes with
			// startingVersion, which deltafs does not send; the first
			// one describes the snapshot.
			if metadata == nil {
				if err := checkAccess(l.MetaData); err != nil {
					return pageEnd{}, err
				}
				if err := a.metadata(l.MetaData.DeltaMetadata, l.MetaData); err != nil {
					return pageEnd{}, fmt.Errorf("line %d of the answer: page %d %v", n, page, err)
				}
				metadata = l.MetaData.DeltaMetadata
			}
		case l.File != nil:
			if format == formatParquet {
				if err := l.File.fromParquet(); err != nil {
					return pageEnd{}, fmt.Errorf("line %d of the answer: %v", n, err)
				}
			} else if l.File.URL != nil {
				return pageEnd{}, fmt.Errorf("line %d of the answer: a parquet-format file in a delta-format answer", n)
			}
			if len(l.File.DeltaSingleAction) == 0 {
				return pageEnd{}, fmt.Errorf("line %d: file without deltaSingleAction", n)
			}
			// The id is the file's identity (PROTOCOL.md: "A unique
			// string for the file in a table"): an answer that repeats
			// one lists a file twice, or two files as one.
			if l.File.ID == "" {
				return pageEnd{}, fmt.Errorf("line %d of the answer: a file without an id", n)
			}
			if a.ids[l.File.ID] {
				return pageEnd{}, fmt.Errorf("line %d of the answer: the file id %s again", n, shortQuote(l.File.ID))
			}
			a.ids[l.File.ID] = true
			a.out.Files = append(a.out.Files, *l.File)
		case l.EndStream != nil && l.EndStream.ErrorMessage != "":
			return pageEnd{}, fmt.Errorf("the server failed the query: %s", clip(c.redact(oneLine(l.EndStream.ErrorMessage))))
		case l.ErrorMessage != "":
			return pageEnd{}, fmt.Errorf("the server failed the query: %s", clip(c.redact(oneLine(l.ErrorMessage))))
		case l.EndStream != nil:
			end.next = l.EndStream.NextPageToken
		case l.NextPageToken != "":
			end.next = l.NextPageToken
		case l.Add != nil:
			// Data change actions answer startingVersion queries only.
			return pageEnd{}, fmt.Errorf("line %d of the answer: an add action in a snapshot's answer", n)
		}
	}
	if err := sc.Err(); err != nil {
		return pageEnd{}, answerError(err, n, c.maxLine)
	}
	if end.status != nil {
		end.status.Message = c.redact(end.status.Message)
		end.status.ErrorMessage = c.redact(end.status.ErrorMessage)
		return end, nil
	}
	if protocol == nil || metadata == nil {
		if page > 1 {
			return pageEnd{}, fmt.Errorf("page %d of the answer has no protocol or metaData line", page)
		}
		return pageEnd{}, errors.New("the answer has no protocol or metaData line")
	}
	a.out.Protocol = protocol
	a.pages = page
	return end, nil
}

// metadata takes a page's metaData: the first page's, or one equal to it.
// Its error completes "page K ".
func (a *answer) metadata(md json.RawMessage, l *metaDataLine) error {
	if a.out.Metadata != nil {
		if !bytes.Equal(a.out.Metadata, md) || a.out.Location != l.Location {
			return errors.New("has another metaData than the first page")
		}
		return nil
	}
	a.out.Metadata, a.out.Location, a.numFiles = md, l.Location, l.NumFiles
	return nil
}

// finish checks the whole answer.
func (a *answer) finish() (*Response, error) {
	// A snapshot query lists every file of the version (deltafs sends no
	// predicates or limit): an answer cut short at a line's end is caught
	// when the server counted them.
	if a.numFiles != nil && *a.numFiles != int64(len(a.out.Files)) {
		return nil, fmt.Errorf("the answer lists %d files, its metaData says the version has %d", len(a.out.Files), *a.numFiles)
	}
	a.out.PlainURLs = a.c.plain
	return a.out, nil
}

// query is the state of a query's answer across its pages.
type query struct {
	c        *Client
	out      *Response
	ids      map[string]bool // file ids seen
	format   responseFormat
	numFiles *int64
	lines    int   // lines read, on every page
	read     int64 // bytes read, on every page
}

// page asks for one page of the answer (token "": the first) and adds it
// to q; next is the next page's token ("" for none).
func (q *query) page(ctx context.Context, version *int64, token string, page int) (next string, err error) {
	c, out := q.c, q.out
	req := map[string]any{}
	if version != nil {
		req["version"] = *version
	}
	if token != "" {
		req["pageToken"] = token
	}
	body, _ := json.Marshal(req)
	resp, err := c.do(ctx, http.MethodPost, c.base+"/query", body)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	ver := int64(-1)
	if h := resp.Header.Get("Delta-Table-Version"); h != "" {
		v, err := strconv.ParseInt(h, 10, 64)
		if err != nil || v < 0 {
			return "", fmt.Errorf("the server's Delta-Table-Version %q is not a version", h)
		}
		ver = v
	}
	if page == 1 {
		out.Version = ver
	} else if ver != out.Version {
		return "", fmt.Errorf("page %d of the answer is of version %d, the first of version %d", page, ver, out.Version)
	}
	// The scanner hands out the bytes before a read error as a last line:
	// the error, kept by answer, is the cause then, not that line's JSON.
	bounded := &boundedReader{r: resp.Body, max: c.maxBody, read: q.read}
	defer func() { q.read = bounded.read }()
	answer := &stickyReader{r: bounded}
	sc := bufio.NewScanner(answer)
	sc.Buffer(make([]byte, 0, min(64<<10, c.maxLine)), c.maxLine)
	var protocol, metadata json.RawMessage // this page's
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		q.lines++
		n := q.lines
		var l responseLine
		if err := json.Unmarshal(line, &l); err != nil {
			if answer.err != nil {
				return "", answerError(answer.err, n-1, c.maxLine)
			}
			return "", fmt.Errorf("line %d of the answer: %s", n, httpjson.Cause(err))
		}
		if (l.Protocol != nil) && (l.MetaData != nil || l.File != nil) || l.MetaData != nil && l.File != nil {
			// PROTOCOL.md: "It must contain only ONE of the above fields."
			return "", fmt.Errorf("line %d of the answer holds more than one of protocol, metaData and file", n)
		}
		switch {
		case l.Protocol != nil:
			if protocol != nil {
				return "", fmt.Errorf("line %d of the answer: a second protocol", n)
			}
			format := formatDelta
			if len(l.Protocol.DeltaProtocol) == 0 {
				// The parquet format: the server did not take (or
				// ignored) responseformat=delta.
				p, err := parquetProtocol(l.Protocol.MinReaderVersion)
				if err != nil {
					return "", fmt.Errorf("line %d of the answer: %v", n, err)
				}
				protocol, format = p, formatParquet
			} else {
				if !isObject(l.Protocol.DeltaProtocol) {
					return "", fmt.Errorf("line %d of the answer: deltaProtocol is not a JSON object", n)
				}
				protocol = l.Protocol.DeltaProtocol
			}
			if page == 1 {
				out.Protocol, q.format = protocol, format
			} else if format != q.format || !bytes.Equal(protocol, out.Protocol) {
				return "", fmt.Errorf("line %d of the answer: page %d has another protocol than the first page", n, page)
			}
		case l.MetaData != nil && q.format == formatParquet:
			if len(l.MetaData.DeltaMetadata) != 0 {
				return "", fmt.Errorf("line %d of the answer: a delta-format metaData in a parquet-format answer", n)
			}
			if metadata != nil {
				continue // a historical one: the first describes the snapshot
			}
			md, err := parquetMetadata(l.MetaData)
			if err != nil {
				return "", fmt.Errorf("line %d of the answer: %v", n, err)
			}
			if err := checkAccess(l.MetaData); err != nil {
				return "", err
			}
			metadata = md
			if err := q.setMetadata(md, l.MetaData, page, n); err != nil {
				return "", err
			}
		case l.MetaData != nil:
			if len(l.MetaData.DeltaMetadata) == 0 {
				return "", fmt.Errorf("line %d: metaData without deltaMetadata", n)
			}
			if !isObject(l.MetaData.DeltaMetadata) {
				return "", fmt.Errorf("line %d of the answer: deltaMetadata is not a JSON object", n)
			}
			if err := checkAccess(l.MetaData); err != nil {
				return "", err
			}
			// A historical metaData (with a version) only comes with
			// startingVersion, which deltafs does not send; the first
			// one describes the snapshot.
			if metadata == nil {
				metadata = l.MetaData.DeltaMetadata
				if err := q.setMetadata(metadata, l.MetaData, page, n); err != nil {
					return "", err
				}
			}
		case l.File != nil:
			if q.format == formatParquet {
				if err := l.File.fromParquet(); err != nil {
					return "", fmt.Errorf("line %d of the answer: %v", n, err)
				}
			} else if l.File.URL != nil {
				return "", fmt.Errorf("line %d of the answer: a parquet-format file in a delta-format answer", n)
			}
			if len(l.File.DeltaSingleAction) == 0 {
				return "", fmt.Errorf("line %d: file without deltaSingleAction", n)
			}
			// The id is the file's identity (PROTOCOL.md: "A unique
			// string for the file in a table"): an answer that repeats
			// one lists a file twice, or two files as one.
			if l.File.ID == "" {
				return "", fmt.Errorf("line %d of the answer: a file without an id", n)
			}
			if q.ids[l.File.ID] {
				return "", fmt.Errorf("line %d of the answer: the file id %s again", n, shortQuote(l.File.ID))
			}
			q.ids[l.File.ID] = true
			out.Files = append(out.Files, *l.File)
		case l.EndStream != nil && l.EndStream.ErrorMessage != "":
			return "", fmt.Errorf("the server failed the query: %s", clip(c.redact(oneLine(l.EndStream.ErrorMessage))))
		case l.ErrorMessage != "":
			return "", fmt.Errorf("the server failed the query: %s", clip(c.redact(oneLine(l.ErrorMessage))))
		case l.EndStream != nil && l.EndStream.NextPageToken != "":
			if next != "" {
				return "", fmt.Errorf("line %d of the answer: a second endStreamAction with a nextPageToken", n)
			}
			next = l.EndStream.NextPageToken
		case l.Add != nil:
			// Data change actions answer startingVersion queries only.
			return "", fmt.Errorf("line %d of the answer: an add action in a snapshot's answer", n)
		}
	}
	if err := sc.Err(); err != nil {
		return "", answerError(err, q.lines, c.maxLine)
	}
	if page > 1 && (protocol == nil || metadata == nil) {
		return "", fmt.Errorf("page %d of the answer has no protocol or metaData line", page)
	}
	return next, nil
}

// setMetadata takes the first page's metaData, and checks that a later
// page's is the same.
func (q *query) setMetadata(md json.RawMessage, l *metaDataLine, page, n int) error {
	if page == 1 {
		q.out.Metadata, q.out.Location, q.numFiles = md, l.Location, l.NumFiles
		return nil
	}
	if !bytes.Equal(md, q.out.Metadata) || l.Location != q.out.Location {
		return fmt.Errorf("line %d of the answer: page %d has another metaData than the first page", n, page)
	}
	return nil
}

// checkAccess refuses a table shared for directory-based access only.
func checkAccess(m *metaDataLine) error {
	if m.AccessModes != nil && !contains(m.AccessModes, "url") {
		return fmt.Errorf("the table is shared for directory-based access only (accessModes %s): deltafs reads through pre-signed URLs", clip(fmt.Sprint(m.AccessModes)))
	}
	return nil
}

// answerError is the one line for a failed read of a query's answer.
func answerError(err error, lines, maxLine int) error {
	var te *timeoutError
	var tl *tooLongError
	switch {
	case errors.As(err, &te), errors.As(err, &tl):
		return err
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("line %d of the answer is longer than %s", lines+1, humanize.IBytes(uint64(maxLine)))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the answer was cut short (the connection ended before its end)")
	}
	return fmt.Errorf("reading the answer: %v", cleanNetErr(err))
}

func isObject(r json.RawMessage) bool {
	r = bytes.TrimSpace(r)
	return len(r) > 0 && r[0] == '{'
}

// clip cuts a server's message for an error line to 1000 bytes.
func clip(s string) string {
	if len(s) > 1000 {
		return strings.ToValidUTF8(s[:1000], "") + "..."
	}
	return s
}

// shortQuote quotes a server's string for an error line, cut to 64 bytes.
func shortQuote(s string) string { return httpjson.Quote(s, 64) }

// do sends one API request with the token and the capabilities, and turns
// a non-2xx answer into an *APIError. Transient failures (5xx, a request
// that did not get through or got no answer in time) are tried 3 times; a
// refused OAuth token is renewed and tried once more.
// The answer's body is read under a watchdog (bounds.go); closing it ends
// the request.
func (c *Client) do(ctx context.Context, method, u string, body []byte) (*http.Response, error) {
	var last error
	renewed := false
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
		}
		w := newWatchdog(ctx, c.timeout, answerTimeouts*c.timeout)
		req, err := http.NewRequestWithContext(w.ctx, method, u, bytes.NewReader(body))
		if err != nil {
			w.stop()
			return nil, err
		}
		tok, err := c.cred.token(ctx)
		if err != nil {
			w.stop()
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("delta-sharing-capabilities", capabilities())
		if body != nil {
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			w.stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if _, ok := w.timedOut(); ok {
				last = fmt.Errorf("the sharing server sent no answer within %v", c.timeout)
				continue
			}
			if errors.Is(err, secret.ErrRedirect) {
				return nil, cleanNetErr(err) // not retried: it would be again
			}
			last = fmt.Errorf("the sharing server cannot be reached: %v", cleanNetErr(err))
			continue
		}
		w.progress()
		resp.Body = &watchedBody{rc: resp.Body, w: w}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		ae := &APIError{*httpjson.Decode(resp.StatusCode, b, "errorCode")}
		ae.Message = clip(c.redact(oneLine(ae.Message)))
		if resp.StatusCode == http.StatusUnauthorized && !renewed && c.cred.renew(tok) {
			renewed, last = true, ae
			attempt--
			continue
		}
		if resp.StatusCode < 500 {
			return nil, ae
		}
		last = ae
	}
	return nil, last
}

// redact removes the token, and every other secret, from a server's
// message, should it echo it.
func (c *Client) redact(s string) string { return secret.Redact(s) }

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
