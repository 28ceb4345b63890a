package sharing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/deltafs/deltafs/internal/httpjson"
)

// The listing endpoints (PROTOCOL.md: List Shares, List Schemas in a
// Share, List Tables in a Schema, List all Tables in a Share): GET
// {prefix}/shares, /shares/{share}/schemas,
// /shares/{share}/schemas/{schema}/tables and /shares/{share}/all-tables,
// in pages of maxResults, the next named by nextPageToken (absent or
// empty after the last). A listing is bounded like every other answer:
// at most maxListed names, maxListPages pages of at most maxListPage
// bytes each and maxListBytes in all, within listTimeout for all of them; a page token given
// twice (pages without end) fails it. Names are returned as the server
// gives them (the mount leaves out those that cannot be a directory); an
// item without a name, or of another share or schema than asked, fails
// the listing. Variables for tests.
var (
	maxListed    = 100_000
	maxListPages = 10_000
	maxListPage  = int64(16 << 20)
	maxListBytes = int64(256 << 20)
	listTimeout  = 5 * time.Minute
)

// listResults is the maxResults asked for.
const listResults = 500

// ListShares is List Shares: the names of the shares the profile's
// recipient can read.
func (c *Client) ListShares(ctx context.Context) ([]string, error) {
	return c.list(ctx, "/shares", func(it listItem) error { return nil })
}

// ListSchemas is List Schemas in a Share.
func (c *Client) ListSchemas(ctx context.Context, share string) ([]string, error) {
	return c.list(ctx, "/shares/"+url.PathEscape(share)+"/schemas", func(it listItem) error {
		if it.Share != nil && !strings.EqualFold(*it.Share, share) {
			return fmt.Errorf("the server lists schema %s of share %s among share %s's", shortQuote(it.Name), shortQuote(*it.Share), shortQuote(share))
		}
		return nil
	})
}

// ListTables is List Tables in a Schema.
func (c *Client) ListTables(ctx context.Context, share, schema string) ([]string, error) {
	return c.list(ctx, "/shares/"+url.PathEscape(share)+"/schemas/"+url.PathEscape(schema)+"/tables", func(it listItem) error {
		if it.Share != nil && !strings.EqualFold(*it.Share, share) || it.Schema != nil && !strings.EqualFold(*it.Schema, schema) {
			return fmt.Errorf("the server lists table %s of %s.%s among %s.%s's", shortQuote(it.Name), shortQuote(deref(it.Share)), shortQuote(deref(it.Schema)),
				shortQuote(share), shortQuote(schema))
		}
		return nil
	})
}

// SharedTable is a table of List all Tables in a Share.
type SharedTable struct{ Schema, Name string }

// ListAllTables is List all Tables in a Share: every table of every
// schema, each with its schema.
func (c *Client) ListAllTables(ctx context.Context, share string) ([]SharedTable, error) {
	var out []SharedTable
	_, err := c.list(ctx, "/shares/"+url.PathEscape(share)+"/all-tables", func(it listItem) error {
		switch {
		case it.Share != nil && !strings.EqualFold(*it.Share, share):
			return fmt.Errorf("the server lists table %s of share %s among share %s's", shortQuote(it.Name), shortQuote(*it.Share), shortQuote(share))
		case it.Schema == nil || *it.Schema == "":
			return fmt.Errorf("the server lists table %s without its schema", shortQuote(it.Name))
		}
		out = append(out, SharedTable{Schema: *it.Schema, Name: it.Name})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listItem is an item of a listing's page: the fields deltafs reads.
type listItem struct {
	Name   string  `json:"name"`
	Share  *string `json:"share"`
	Schema *string `json:"schema"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// list reads every page of the listing at path, checking each item with
// check, within the listing's bounds.
func (c *Client) list(ctx context.Context, path string, check func(listItem) error) ([]string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, listTimeout, fmt.Errorf("the listing did not end within %v", listTimeout))
	defer cancel()
	fail := func(err error) error { return fmt.Errorf("listing %s at %s: %w", path, c.endpoint, err) }
	q := url.Values{"maxResults": {fmt.Sprint(listResults)}}
	seen := map[string]bool{}
	var names []string
	var read int64
	for pages := 1; ; pages++ {
		page, n, err := c.listPage(ctx, path+"?"+q.Encode())
		if read += n; err == nil && read > maxListBytes {
			err = fmt.Errorf("the answer's pages are longer than %s in all", humanize.IBytes(uint64(maxListBytes)))
		}
		if err != nil {
			if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
				return nil, fail(cause)
			}
			return nil, fail(err)
		}
		for i, it := range page.Items {
			if it.Name == "" {
				return nil, fail(fmt.Errorf("item %d of page %d has no name", i+1, pages))
			}
			if err := check(it); err != nil {
				return nil, fail(err)
			}
			names = append(names, it.Name)
		}
		next := deref(page.NextPageToken)
		switch {
		case len(names) > maxListed:
			return nil, fail(fmt.Errorf("the server lists more than %d names", maxListed))
		case next == "":
			return names, nil
		case seen[next]:
			return nil, fail(fmt.Errorf("the server gives page token %s twice: its pages would not end", shortQuote(next)))
		case pages >= maxListPages:
			return nil, fail(fmt.Errorf("the server's listing goes on past %d pages", maxListPages))
		}
		seen[next] = true
		q.Set("pageToken", next)
	}
}

type listAnswer struct {
	Items         []listItem `json:"items"`
	NextPageToken *string    `json:"nextPageToken"`
}

// listPage is one page, GET endpoint+pathQuery, at most maxListPage
// bytes, and its length.
func (c *Client) listPage(ctx context.Context, pathQuery string) (listAnswer, int64, error) {
	resp, err := c.do(ctx, http.MethodGet, c.endpoint+pathQuery, nil)
	if err != nil {
		return listAnswer{}, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxListPage+1))
	n := int64(len(data))
	if err != nil {
		var te *timeoutError
		if errors.As(err, &te) {
			return listAnswer{}, n, te
		}
		return listAnswer{}, n, fmt.Errorf("reading the answer: %v", cleanNetErr(err))
	}
	if n > maxListPage {
		return listAnswer{}, n, fmt.Errorf("a page of the answer is longer than %s", humanize.IBytes(uint64(maxListPage)))
	}
	var page listAnswer
	if err := json.Unmarshal(data, &page); err != nil {
		return listAnswer{}, n, fmt.Errorf("not a valid answer: %s", httpjson.Cause(err))
	}
	return page, n, nil
}

// ParseCatalog splits a catalog location: PROFILE.share, a profile file
// (its shares, their schemas, their tables), or PROFILE.share#SHARE (the
// share's schemas and tables; a share's name may hold one '.', as
// share.schema.table needs two). ok is false for any other location (a
// table's PROFILE.share#share.schema.table, a directory named *.share).
func ParseCatalog(location string) (profile, share string, ok bool) {
	if strings.Contains(location, "://") {
		return "", "", false
	}
	if i := strings.LastIndexByte(location, '#'); i >= 0 {
		frag := location[i+1:]
		if !strings.HasSuffix(location[:i], ".share") || strings.Count(frag, ".") >= 2 {
			return "", "", false
		}
		return location[:i], frag, true
	}
	if !strings.HasSuffix(location, ".share") {
		return "", "", false
	}
	if fi, err := os.Stat(location); err != nil || fi.IsDir() {
		return "", "", false // a table's directory, or nothing: opened as a path
	}
	return location, "", true
}

// Browser lists a share's schemas and tables (or a profile's shares too)
// for a mount of many tables, and names each table as a location that
// Open opens, each with its own client and credentials.
type Browser struct {
	location       string
	profile, share string
	c              *Client
}

// NewBrowser is the Browser of PROFILE.share or PROFILE.share#SHARE; its
// listings time out as queries do (timeout; 0: DefaultTimeout).
func NewBrowser(location string, timeout time.Duration) (*Browser, error) {
	profile, share, ok := ParseCatalog(location)
	if !ok {
		return nil, fmt.Errorf("%s: want PROFILE.share or PROFILE.share#share", location)
	}
	if strings.Contains(location, "#") && !validName(share) {
		return nil, fmt.Errorf("%s: want PROFILE.share#share (a share's name, not empty)", location)
	}
	p, err := LoadProfile(profile, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	return &Browser{location: location, profile: profile, share: share, c: NewClient(p, Name{Profile: profile}, hc, timeout)}, nil
}

// validName: a name ParseLocation takes as one level.
func validName(s string) bool {
	return s != "" && len(s) <= 255 && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '/' || r == 0x7f })
}

// Levels is the number of names from the mount to a table: 2 for a
// share (schemas, tables), 3 for a profile (shares first).
func (b *Browser) Levels() int {
	if b.share != "" {
		return 2
	}
	return 3
}

// List returns the names under path (shares, schemas or tables).
func (b *Browser) List(ctx context.Context, path []string) ([]string, error) {
	full := path
	if b.share != "" {
		full = append([]string{b.share}, path...)
	}
	switch len(full) {
	case 0:
		return b.c.ListShares(ctx)
	case 1:
		return b.c.ListSchemas(ctx, full[0])
	case 2:
		return b.c.ListTables(ctx, full[0], full[1])
	}
	return nil, fmt.Errorf("%s: no listing at depth %d", b.location, len(path))
}

// Table is the location of the table at path (its names below the
// mount), PROFILE.share#share.schema.table, checked to name that table
// back: a schema's or a table's name holding '.' would name another.
func (b *Browser) Table(path []string) (string, error) {
	full := path
	if b.share != "" {
		full = append([]string{b.share}, path...)
	}
	if len(full) != 3 {
		return "", fmt.Errorf("%s: not a table's path", b.location)
	}
	loc := b.profile + "#" + strings.Join(full, ".")
	n, err := ParseLocation(loc)
	if err != nil || n.Share != full[0] || n.Schema != full[1] || n.Table != full[2] {
		return "", fmt.Errorf("%s: a schema or table name holding '.', or a name holding a space, a control character or '/', cannot be opened as PROFILE.share#share.schema.table", loc)
	}
	return loc, nil
}

// Name names the directory or table at path in log lines:
// PROFILE.share#share.schema.table, as far as path goes.
func (b *Browser) Name(path []string) string {
	full := path
	if b.share != "" {
		full = append([]string{b.share}, path...)
	}
	if len(full) == 0 {
		return b.profile
	}
	return b.profile + "#" + strings.Join(full, ".")
}
