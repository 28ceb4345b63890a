package unitytest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// Listings (all.yaml, listSchemas and listTables): GET /schemas and GET
// /tables, in pages of max_results (at most 50, the specification's
// maximum; 0 for the server's 50; negative: 400 INVALID_ARGUMENT), the
// next page named by next_page_token, absent after the last. Schemas are
// those of the tables added. ListRequests counts the listing requests.
//
// For attacks: SetListExtra adds names, as given, to every table listing
// (duplicates, names with '/' or NUL), and SetListEndless makes every page
// name a next one, without end.

type listing struct {
	ListRequests atomic.Int64
	endless      atomic.Bool
	extra        atomic.Pointer[[]string]
}

// SetListExtra adds names to every table listing.
func (s *Server) SetListExtra(names ...string) { s.listing.extra.Store(&names) }

// SetListEndless makes every listing page name a next page.
func (s *Server) SetListEndless(on bool) { s.listing.endless.Store(on) }

// DropTable removes a table from the catalog.
func (s *Server) DropTable(fullName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tb := s.tables[strings.ToLower(fullName)]; tb != nil {
		delete(s.byID, tb.id)
		delete(s.tables, strings.ToLower(fullName))
	}
}

func (s *Server) listSchemas(w http.ResponseWriter, r *http.Request) {
	catalog := r.URL.Query().Get("catalog_name")
	if catalog == "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "catalog_name is required")
		return
	}
	s.mu.Lock()
	seen := map[string]bool{}
	var items []map[string]any
	for _, tb := range s.tables {
		p := strings.SplitN(tb.full, ".", 3)
		if !strings.EqualFold(p[0], catalog) || seen[strings.ToLower(p[1])] {
			continue
		}
		seen[strings.ToLower(p[1])] = true
		items = append(items, map[string]any{"name": p[1], "catalog_name": p[0], "full_name": p[0] + "." + p[1]})
	}
	s.mu.Unlock()
	s.page(w, r, "schemas", items)
}

func (s *Server) listTables(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	catalog, schema := q.Get("catalog_name"), q.Get("schema_name")
	if catalog == "" || schema == "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "catalog_name and schema_name are required")
		return
	}
	s.mu.Lock()
	var items []map[string]any
	for _, tb := range s.tables {
		p := strings.SplitN(tb.full, ".", 3)
		if !strings.EqualFold(p[0], catalog) || !strings.EqualFold(p[1], schema) {
			continue
		}
		items = append(items, map[string]any{"name": p[2], "catalog_name": p[0], "schema_name": p[1],
			"table_type": "MANAGED", "data_source_format": "DELTA", "table_id": tb.id, "storage_location": tb.location})
	}
	s.mu.Unlock()
	if extra := s.listing.extra.Load(); extra != nil {
		for _, n := range *extra {
			items = append(items, map[string]any{"name": n, "catalog_name": catalog, "schema_name": schema,
				"table_type": "MANAGED", "data_source_format": "DELTA"})
		}
	}
	s.page(w, r, "tables", items)
}

// page answers one page of items (sorted by name) from page_token.
func (s *Server) page(w http.ResponseWriter, r *http.Request, key string, items []map[string]any) {
	s.listing.ListRequests.Add(1)
	q := r.URL.Query()
	size := 50
	if m := q.Get("max_results"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "max_results must be a non-negative integer")
			return
		}
		if n > 0 && n < size {
			size = n
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i]["name"].(string) < items[j]["name"].(string) })
	from := 0
	if tok := q.Get("page_token"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "p"))
		if err != nil || n < 0 || !strings.HasPrefix(tok, "p") {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid page_token")
			return
		}
		from = min(n, len(items))
	}
	to := min(from+size, len(items))
	answer := map[string]any{key: append([]map[string]any{}, items[from:to]...)}
	switch {
	case s.listing.endless.Load():
		answer["next_page_token"] = "p" + strconv.Itoa(to) + "-" + randomHex(4)
		if to == len(items) {
			answer[key] = []any{}
			answer["next_page_token"] = "p" + strconv.Itoa(to+int(s.listing.ListRequests.Load()))
		}
	case to < len(items):
		answer["next_page_token"] = "p" + strconv.Itoa(to)
	}
	writeJSON(w, answer)
}
