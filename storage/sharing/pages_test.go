package sharing

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Pages: a server that paginates a query's answer without being asked
// (an endStreamAction with a nextPageToken) is followed to the last page,
// so no file is left out; pages without end, repeated page tokens, and
// pages that disagree with the first fail the query with one line. The
// client used to take the first page for the whole answer.

// pageRequest is the pageToken of a query's body ("" for none).
func pageRequest(t *testing.T, r *http.Request) string {
	var body struct {
		PageToken string `json:"pageToken"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Errorf("query body %q: %v", b, err)
	}
	return body.PageToken
}

// paged answers with files of ids, size per page, page tokens "p<offset>";
// counted: metaData has numFiles.
func paged(t *testing.T, h *hostile, ids []string, size int, counted bool) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		off := 0
		if tok := pageRequest(t, r); tok != "" {
			off, _ = strconv.Atoi(strings.TrimPrefix(tok, "p"))
		}
		md := metadataLine
		if counted {
			md = strings.Replace(md, `"location"`, fmt.Sprintf(`"numFiles":%d,"location"`, len(ids)), 1)
		}
		io.WriteString(w, protocolLine+"\n"+md+"\n")
		end := min(off+size, len(ids))
		for _, id := range ids[off:end] {
			io.WriteString(w, fileLine(id, h.srv.URL+"/files/t/"+id+".parquet", 10)+"\n")
		}
		if end < len(ids) {
			fmt.Fprintf(w, `{"endStreamAction":{"nextPageToken":"p%d","minUrlExpirationTimestamp":1}}`+"\n", end)
		}
	}
}

// TestPagesFollowed: 7 files in pages of 2 are the 7 files, whether the
// metaData counts them or not (without a count, the first page used to be
// taken silently for the version).
func TestPagesFollowed(t *testing.T) {
	h := startHostile(t)
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, counted := range []bool{true, false} {
		h.query = paged(t, h, ids, 2, counted)
		st, err := h.open(h.client(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(st.urls) != len(ids) {
			t.Fatalf("numFiles given %v: %d files of %d", counted, len(st.urls), len(ids))
		}
	}
}

// TestPagesHostile: pagination that never ends, or pages that contradict
// the first, fail the query with one line, within a bound.
func TestPagesHostile(t *testing.T) {
	h := startHostile(t)
	var requests atomic.Int64
	start := func(w http.ResponseWriter, proto, meta string) {
		requests.Add(1)
		io.WriteString(w, proto+"\n"+meta+"\n")
	}
	for _, tc := range []struct {
		name  string
		query func(w http.ResponseWriter, r *http.Request)
		want  string
	}{
		{"same token", func(w http.ResponseWriter, r *http.Request) {
			start(w, protocolLine, metadataLine)
			io.WriteString(w, `{"endStreamAction":{"nextPageToken":"again"}}`+"\n")
		}, `page 2 of the answer gives the page token "again" again (pages without end)`},
		{"tokens cycle", func(w http.ResponseWriter, r *http.Request) {
			start(w, protocolLine, metadataLine)
			next := map[string]string{"": "x", "x": "y", "y": "x"}[pageRequest(t, r)]
			fmt.Fprintf(w, `{"endStreamAction":{"nextPageToken":%q}}`+"\n", next)
		}, `page 3 of the answer gives the page token "x" again`},
		{"endless new tokens", func(w http.ResponseWriter, r *http.Request) {
			start(w, protocolLine, metadataLine)
			fmt.Fprintf(w, `{"endStreamAction":{"nextPageToken":"t%d"}}`+"\n", requests.Load())
		}, "the answer has more than 20 pages"},
		{"other protocol", func(w http.ResponseWriter, r *http.Request) {
			if pageRequest(t, r) == "" {
				start(w, protocolLine, metadataLine)
				io.WriteString(w, `{"endStreamAction":{"nextPageToken":"2"}}`+"\n")
				return
			}
			start(w, strings.Replace(protocolLine, `"minReaderVersion":1`, `"minReaderVersion":3`, 1), metadataLine)
		}, "line 4 of the answer: page 2 has another protocol than the first page"},
		{"other metaData", func(w http.ResponseWriter, r *http.Request) {
			if pageRequest(t, r) == "" {
				start(w, protocolLine, metadataLine)
				io.WriteString(w, `{"endStreamAction":{"nextPageToken":"2"}}`+"\n")
				return
			}
			start(w, protocolLine, strings.Replace(metadataLine, `"id":"x"`, `"id":"y"`, 1))
		}, "line 5 of the answer: page 2 has another metaData than the first page"},
		{"page without protocol", func(w http.ResponseWriter, r *http.Request) {
			if pageRequest(t, r) == "" {
				start(w, protocolLine, metadataLine)
				io.WriteString(w, `{"endStreamAction":{"nextPageToken":"2"}}`+"\n")
				return
			}
			io.WriteString(w, fileLine("a", h.srv.URL+"/files/t/a.parquet", 10)+"\n")
		}, "page 2 of the answer has no protocol or metaData line"},
		{"file twice across pages", func(w http.ResponseWriter, r *http.Request) {
			start(w, protocolLine, metadataLine)
			io.WriteString(w, fileLine("a", h.srv.URL+"/files/t/a.parquet", 10)+"\n")
			if pageRequest(t, r) == "" {
				io.WriteString(w, `{"endStreamAction":{"nextPageToken":"2"}}`+"\n")
			}
		}, `line 7 of the answer: the file id "a" again`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			h.query = tc.query
			c := h.client(0)
			c.maxPages = 20
			begin := time.Now()
			st, err := h.open(c)
			if st != nil {
				t.Fatalf("opened, want %q", tc.want)
			}
			checkLine(t, err, tc.want)
			if n := requests.Load(); n > 21 {
				t.Errorf("%d query requests", n)
			}
			if el := time.Since(begin); el > 5*time.Second {
				t.Errorf("failed after %v", el)
			}
		})
	}
}

// TestPagesByteBound: the pages together are bounded as one answer.
func TestPagesByteBound(t *testing.T) {
	h := startHostile(t)
	pad := strings.Repeat(" ", 4000) // a line's blanks count as its bytes
	var requests atomic.Int64
	h.query = func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		io.WriteString(w, protocolLine+"\n"+metadataLine+pad+"\n")
		fmt.Fprintf(w, `{"endStreamAction":{"nextPageToken":"t%d"}}`+"\n", n)
	}
	c := h.client(0)
	c.maxBody = 64 << 10
	_, err := h.open(c)
	checkLine(t, err, "the answer is longer than 64 KiB")
	if n := requests.Load(); n > 20 {
		t.Errorf("%d pages of 4 KiB under a bound of 64 KiB", n)
	}
}
