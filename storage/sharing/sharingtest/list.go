package sharingtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Listings (PROTOCOL.md: List Shares, List Schemas in a Share, List
// Tables in a Schema, List all Tables in a Share): GET {prefix}/shares,
// /shares/{share}/schemas, /shares/{share}/schemas/{schema}/tables and
// /shares/{share}/all-tables, of the tables added (names as added, shares
// and schemas case-insensitive), sorted by name, in pages of maxResults
// (absent: SetListPage's size; negative or not a number: 400; 0: no items,
// and a nextPageToken when there are any), the next page named by
// nextPageToken, absent after the last. A share or schema with no table
// answers 404. ListRequests counts the listing requests.
//
// For attacks: SetListExtra adds items of these names, as given, to
// every table listing (duplicates, "..", names with '/' or NUL), and
// SetListEndless makes every page name a next one, without end.

type listing struct {
	ListRequests atomic.Int64
	page         atomic.Int64 // items a page at most; 0: 100
	endless      atomic.Bool
	extra        atomic.Pointer[[]string]
}

// ListRequests is the number of listing requests answered so far.
func (s *Server) ListRequests() int64 { return s.listing.ListRequests.Load() }

// SetListPage makes listing pages hold at most n items (0: 100).
func (s *Server) SetListPage(n int) { s.listing.page.Store(int64(n)) }

// SetListExtra adds items of these names to every table listing.
func (s *Server) SetListExtra(names ...string) { s.listing.extra.Store(&names) }

// SetListEndless makes every listing page name a next page.
func (s *Server) SetListEndless(on bool) { s.listing.endless.Store(on) }

// DropTable stops sharing share.schema.name.
func (s *Server) DropTable(share, schema, name string) {
	s.mu.Lock()
	delete(s.tables, strings.ToLower(share+"."+schema+"."+name))
	s.mu.Unlock()
}

// listings answers a listing request (parts: the path below the prefix),
// reporting whether it was one.
func (s *Server) listings(w http.ResponseWriter, r *http.Request, parts []string) bool {
	n := len(parts)
	isList := parts[0] == "shares" && (n == 1 || n == 3 && (parts[2] == "schemas" || parts[2] == "all-tables") ||
		n == 5 && parts[2] == "schemas" && parts[4] == "tables")
	if !isList {
		return false
	}
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "INVALID_PARAMETER_VALUE", "Method not allowed.")
		return true
	}
	s.listing.ListRequests.Add(1)
	var items []map[string]any
	seen := map[string]bool{}
	found := false
	s.mu.Lock()
	for _, tb := range s.tables {
		switch {
		case n == 1:
			if k := strings.ToLower(tb.share); !seen[k] {
				seen[k] = true
				items = append(items, map[string]any{"name": tb.share, "id": "share-" + k})
			}
		case !strings.EqualFold(tb.share, parts[1]):
		case n == 3 && parts[2] == "schemas":
			found = true
			if k := strings.ToLower(tb.schema); !seen[k] {
				seen[k] = true
				items = append(items, map[string]any{"name": tb.schema, "share": tb.share})
			}
		case n == 3:
			found = true
			items = append(items, map[string]any{"name": tb.name, "schema": tb.schema, "share": tb.share, "id": tb.id})
		case strings.EqualFold(tb.schema, parts[3]):
			found = true
			items = append(items, map[string]any{"name": tb.name, "schema": tb.schema, "share": tb.share, "id": tb.id})
		}
	}
	s.mu.Unlock()
	if n > 1 && !found {
		writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", fmt.Sprintf("%s does not exist.", strings.Join(parts[1:], ".")))
		return true
	}
	if extra := s.listing.extra.Load(); extra != nil && (n == 5 || n == 3 && parts[2] == "all-tables") {
		schema := "default"
		if n == 5 {
			schema = parts[3]
		}
		for _, name := range *extra {
			items = append(items, map[string]any{"name": name, "schema": schema, "share": parts[1]})
		}
	}
	slices.SortStableFunc(items, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
	s.listPage(w, r, items)
	return true
}

// listPage answers one page of items from pageToken.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request, items []map[string]any) {
	q := r.URL.Query()
	size := int(s.listing.page.Load())
	if size <= 0 {
		size = 100
	}
	if m := q.Get("maxResults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "maxResults must be a non-negative integer.")
			return
		}
		size = min(size, n)
	}
	from := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(tok, "-", 2)[0], "p"))
		if err != nil || n < 0 || !strings.HasPrefix(tok, "p") {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "Invalid pageToken.")
			return
		}
		from = min(n, len(items))
	}
	to := min(from+size, len(items))
	answer := map[string]any{"items": items[from:to]}
	switch {
	case s.listing.endless.Load():
		answer["nextPageToken"] = "p" + strconv.Itoa(to) + "-" + strconv.FormatInt(s.listing.ListRequests.Load(), 10)
	case to < len(items):
		answer["nextPageToken"] = "p" + strconv.Itoa(to)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	writeJSON(w, answer)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
		return
	}
	_, _ = w.Write(b)
}
