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
	"github.com/dustin/go-humanize"
)

// Client calls the sharing server for one table: Query Table Version and
// Read Data from a Table, in the delta response format.
type Client struct {
	base  string // endpoint + /shares/{share}/schemas/{schema}/tables/{table}
	token string
	hc    *http.Client
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
// DefaultTimeout.
func NewClient(p Profile, n Name, hc *http.Client, timeout time.Duration) *Client {
	base := p.Endpoint + "/shares/" + url.PathEscape(n.Share) + "/schemas/" + url.PathEscape(n.Schema) + "/tables/" + url.PathEscape(n.Table)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{base: base, token: p.BearerToken, hc: hc, timeout: timeout, maxBody: maxResponse, maxLine: maxLine, maxPages: maxPages, maxVersions: maxVersions,
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
	ErrorMessage string `json:"errorMessage"`
}

// Query is Read Data from a Table: the table's files as of version (nil:
// the current version). deltafs asks for no pages (no maxFiles), but a
// server that paginates anyway (an endStreamAction with a nextPageToken)
// is followed, page after page: each page repeats the first one's
// protocol and metaData, and the pages together are one answer, bounded
// as one (maxResponse bytes, answerTimeouts timeouts) and by maxPages; a
// page token given twice (pages without end) fails the query.
func (c *Client) Query(ctx context.Context, version *int64) (*Response, error) {
	whole := answerTimeouts * c.timeout
	qctx, cancel := context.WithTimeoutCause(ctx, whole, &timeoutError{d: whole, whole: true})
	defer cancel()
	q := &query{c: c, out: &Response{Version: -1}, ids: map[string]bool{}, format: formatUnknown}
	tokens := map[string]bool{}
	token := ""
	for page := 1; ; page++ {
		next, err := q.page(qctx, version, token, page)
		if err != nil {
			var te *timeoutError
			if ctx.Err() == nil && errors.As(context.Cause(qctx), &te) {
				return nil, te // the pages together took too long
			}
			return nil, err
		}
		if next == "" {
			break
		}
		if tokens[next] {
			return nil, fmt.Errorf("page %d of the answer gives the page token %s again (pages without end)", page, shortQuote(next))
		}
		if page >= c.maxPages {
			return nil, fmt.Errorf("the answer has more than %d pages", c.maxPages)
		}
		tokens[next], token = true, next
	}
	out := q.out
	if out.Protocol == nil || out.Metadata == nil {
		return nil, errors.New("the answer has no protocol or metaData line")
	}
	// A snapshot query lists every file of the version (deltafs sends no
	// predicates or limit): an answer cut short at a line's end is caught
	// when the server counted them.
	if q.numFiles != nil && *q.numFiles != int64(len(out.Files)) {
		return nil, fmt.Errorf("the answer lists %d files, its metaData says the version has %d", len(out.Files), *q.numFiles)
	}
	out.PlainURLs = c.plain
	return out, nil
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
// that did not get through or got no answer in time) are tried 3 times.
// The answer's body is read under a watchdog (bounds.go); closing it ends
// the request.
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
		w := newWatchdog(ctx, c.timeout, answerTimeouts*c.timeout)
		req, err := http.NewRequestWithContext(w.ctx, method, u, bytes.NewReader(body))
		if err != nil {
			w.stop()
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
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
