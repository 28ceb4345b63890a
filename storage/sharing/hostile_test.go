package sharing

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// Hostile sharing servers: answers without end, cut short, malformed or
// silent, and file servers that serve another file than announced. Each
// must fail its request with one line that names the cause, within a
// bound, holding a bounded amount of memory; never a table with fewer,
// more or different files, never a hang.

// hostile is a sharing server whose query answers are written by query,
// and whose /files/ serve what files says; the table is at version 0.
type hostile struct {
	srv   *httptest.Server
	query func(w http.ResponseWriter, r *http.Request)
	files http.HandlerFunc
	done  chan struct{} // closed at the end of the test: blocked handlers leave
}

func startHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/version"):
			w.Header().Set("Delta-Table-Version", "0")
		case strings.HasSuffix(r.URL.Path, "/query"), strings.Contains(r.URL.Path, "/queries/"):
			w.Header().Set("Delta-Table-Version", "0")
			w.Header().Set("Content-Type", "application/x-ndjson")
			h.query(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("/files/", func(w http.ResponseWriter, r *http.Request) { h.files(w, r) })
	h.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(h.done)
		h.srv.CloseClientConnections()
		h.srv.Close()
	})
	return h
}

// client is a client of the server with the given timeout.
func (h *hostile) client(timeout time.Duration) *Client {
	p := Profile{Endpoint: h.srv.URL + "/api", BearerToken: "dss-secret-token"}
	return NewClient(p, Name{Share: "s", Schema: "d", Table: "t"}, h.srv.Client(), timeout)
}

// open opens the table through c (newStore, as Open does).
func (h *hostile) open(c *Client) (*Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return newStore(ctx, "p.share#s.d.t", c, h.srv.Client(), slog.New(slog.DiscardHandler))
}

const (
	protocolLine = `{"protocol":{"deltaProtocol":{"minReaderVersion":1,"minWriterVersion":2}}}`
	metadataLine = `{"metaData":{"deltaMetadata":{"id":"x","format":{"provider":"parquet"},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}},"location":"s3://b/t"}}`
)

// fileLine is a file line for id whose URL is u and size size.
func fileLine(id, u string, size int64) string {
	return fmt.Sprintf(`{"file":{"id":%q,"version":0,"timestamp":1700000000000,"deltaSingleAction":{"add":{"path":%q,"size":%d,"partitionValues":{},"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}}}`, id, u, size)
}

// checkLine fails the test unless err is one line holding every want, and
// nothing of Go's or of the token.
func checkLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", want)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error of more than one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q, want it to hold %q", msg, w)
		}
	}
	for _, bad := range []string{"Go struct", "sharing.", "json.", "responseLine", "dss-secret-token", "X-Signature"} {
		if strings.Contains(msg, bad) {
			t.Fatalf("error %q holds %q", msg, bad)
		}
	}
}

// TestHostileEndlessAnswer: a server that streams valid file lines without
// end is cut off at the answer's bound, with one line saying so, having
// read about that many bytes (memory is bounded by the bound, not by the
// server).
func TestHostileEndlessAnswer(t *testing.T) {
	h := startHostile(t)
	var sent atomic.Int64
	h.query = func(w http.ResponseWriter, r *http.Request) {
		bw := bufio.NewWriterSize(w, 64<<10)
		fmt.Fprintln(bw, protocolLine)
		fmt.Fprintln(bw, metadataLine)
		for i := 0; ; i++ {
			n, err := fmt.Fprintln(bw, fileLine(strconv.Itoa(i), h.srv.URL+"/files/t/part-"+strconv.Itoa(i)+".parquet", 100))
			sent.Add(int64(n))
			if err != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			default:
			}
		}
	}
	c := h.client(0)
	c.maxBody = 8 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := c.Query(context.Background(), nil)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	checkLine(t, err, "the answer is longer than 8.0 MiB")
	if took > 30*time.Second {
		t.Fatalf("the endless answer was cut off after %v", took)
	}
	// The client allocated a small multiple of what it read, and stopped
	// reading at the bound (the server got ahead by what sockets buffer).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*uint64(c.maxBody) {
		t.Errorf("reading an 8 MiB answer allocated %d MiB", alloc>>20)
	}
	time.Sleep(100 * time.Millisecond)
	if s := sent.Load(); s > c.maxBody+32<<20 {
		t.Errorf("the server wrote %d MiB before the client left", s>>20)
	}
}

// TestHostileEndlessLine: one line without a newline, hundreds of MB long,
// is cut off at the default line bound.
func TestHostileEndlessLine(t *testing.T) {
	h := startHostile(t)
	h.query = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, protocolLine)
		fmt.Fprintln(w, metadataLine)
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 512 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	start := time.Now()
	_, err := h.client(0).Query(context.Background(), nil)
	checkLine(t, err, "line 3 of the answer is longer than 64 MiB")
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the endless line was cut off after %v", took)
	}
}

// TestHostileAnswers: answers that break the protocol fail the version
// with one line naming the cause, in the protocol's terms. Decisions
// where the specification leaves room: a file line repeating an id (ids
// are "unique for the file in a table") is refused; so is an answer whose
// file count differs from metaData.numFiles (a snapshot query lists every
// file), a negative size, and a URL that is not https (the specification:
// "An https url"; http is read only from an http endpoint, so a test or
// in-house server works but an https one cannot downgrade); file:// and
// s3:// URLs are never read. URLs on other hosts than the endpoint are
// read: that is what pre-signed URLs are (S3, ADLS, GCS).
func TestHostileAnswers(t *testing.T) {
	h := startHostile(t)
	good := func(id string) string { return fileLine(id, h.srv.URL+"/files/t/"+id+".parquet", 10) }
	cases := []struct {
		name  string
		body  string
		https bool // the client was given an https endpoint
		want  []string
	}{
		{"cut mid-line", protocolLine + "\n" + metadataLine + "\n" + good("a")[:60], false, []string{"line 3 of the answer: not JSON"}},
		{"no protocol", metadataLine + "\n" + good("a") + "\n", false, []string{"no protocol or metaData line"}},
		{"no metaData", protocolLine + "\n" + good("a") + "\n", false, []string{"no protocol or metaData line"}},
		{"empty", "", false, []string{"no protocol or metaData line"}},
		{"protocol a string", `{"protocol":"x"}` + "\n" + metadataLine + "\n", false, []string{"line 1 of the answer: protocol is a JSON string, not an object"}},
		{"deltaProtocol a number", `{"protocol":{"deltaProtocol":5}}` + "\n" + metadataLine + "\n", false, []string{"deltaProtocol is not a JSON object"}},
		{"deltaMetadata an array", protocolLine + "\n" + `{"metaData":{"deltaMetadata":[1]}}` + "\n", false, []string{"deltaMetadata is not a JSON object"}},
		{"id a number", protocolLine + "\n" + metadataLine + "\n" + `{"file":{"id":5,"deltaSingleAction":{}}}` + "\n", false, []string{"line 3 of the answer: file.id is a JSON number, not a string"}},
		{"version a string", protocolLine + "\n" + metadataLine + "\n" + `{"file":{"id":"a","version":"0","deltaSingleAction":{}}}` + "\n", false, []string{"file.version is a JSON string, not a number"}},
		{"array line", protocolLine + "\n" + "[1,2]\n" + metadataLine + "\n", false, []string{"line 2 of the answer: a JSON array, not an object"}},
		{"two actions", protocolLine[:len(protocolLine)-1] + `,"file":{"id":"a"}}` + "\n" + metadataLine + "\n", false, []string{"line 1 of the answer holds more than one"}},
		{"second protocol", protocolLine + "\n" + protocolLine + "\n" + metadataLine + "\n", false, []string{"line 2 of the answer: a second protocol"}},
		{"duplicate id", protocolLine + "\n" + metadataLine + "\n" + good("a") + "\n" + strings.Replace(good("a"), "a.parquet", "b.parquet", 1) + "\n", false, []string{`line 4 of the answer: the file id "a" again`}},
		{"no id", protocolLine + "\n" + metadataLine + "\n" + good("") + "\n", false, []string{"line 3 of the answer: a file without an id"}},
		{"fewer files than numFiles", protocolLine + "\n" + strings.Replace(metadataLine, `"location"`, `"numFiles":3,"location"`, 1) + "\n" + good("a") + "\n" + good("b") + "\n", false, []string{"the answer lists 2 files, its metaData says the version has 3"}},
		{"negative size", protocolLine + "\n" + metadataLine + "\n" + fileLine("a", h.srv.URL+"/files/t/a.parquet", -5) + "\n", false, []string{"version 0", "a.parquet: add action with size -5"}},
		{"file URL", protocolLine + "\n" + metadataLine + "\n" + fileLine("a", "file:///etc/passwd", 10) + "\n", false, []string{"version 0", `the file's URL is a "file" URL, not an http(s) URL`}},
		{"s3 URL", protocolLine + "\n" + metadataLine + "\n" + fileLine("a", "s3://b/t/a.parquet", 10) + "\n", false, []string{"version 0", `a "s3" URL`}},
		{"http URL from https", protocolLine + "\n" + metadataLine + "\n" + good("a") + "\n", true, []string{"version 0", `the file's URL is a "http" URL, not an https URL`}},
		{"long server error", protocolLine + "\n" + metadataLine + "\n" + `{"endStreamAction":{"errorMessage":"` + strings.Repeat("no ", 1<<20) + `"}}` + "\n", false, []string{"the server failed the query: no no", "..."}},
		{"server error line", protocolLine + "\n" + metadataLine + "\n" + `{"endStreamAction":{"errorMessage":"boom\nfor dss-secret-token"}}` + "\n", false, []string{"the server failed the query: boom for ***"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.query = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.body) }
			c := h.client(0)
			if tc.https {
				c.plain = false
			}
			st, err := h.open(c)
			if st != nil {
				t.Fatalf("the table opened (log %v), want an error with %q", st.objects, tc.want)
			}
			checkLine(t, err, tc.want...)
			if len(err.Error()) > 2000 {
				t.Fatalf("an error line of %d bytes", len(err.Error()))
			}
		})
	}
	// The control: the same server with a well-formed answer, and an http
	// URL on another host than the endpoint, opens.
	h.query = func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, protocolLine+"\n"+strings.Replace(metadataLine, `"location"`, `"numFiles":2,"location"`, 1)+"\n"+good("a")+"\n"+fileLine("b", "http://other.example:9/t/b.parquet", 7)+"\n")
	}
	st, err := h.open(h.client(0))
	if err != nil {
		t.Fatalf("a well-formed answer: %v", err)
	}
	if len(st.urls) != 2 {
		t.Fatalf("a well-formed answer of 2 files gave %d", len(st.urls))
	}
}

// TestHostileServerDies: a server that closes the connection in the middle
// of its answer (with a Content-Length, or chunked) fails the query; the
// file lines that came are not taken for the version.
func TestHostileServerDies(t *testing.T) {
	for _, framing := range []string{"content-length", "chunked"} {
		t.Run(framing, func(t *testing.T) {
			h := startHostile(t)
			body := protocolLine + "\n" + metadataLine + "\n" + fileLine("a", h.srv.URL+"/files/t/a.parquet", 10) + "\n" + fileLine("b", h.srv.URL+"/files/t/b.parquet", 10) + "\n"
			h.query = func(w http.ResponseWriter, r *http.Request) {
				if framing == "content-length" {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				w.WriteHeader(http.StatusOK)
				// Up to the end of the first file line: what is cut is a
				// whole line, so only the framing tells.
				io.WriteString(w, body[:strings.Index(body, `{"file":{"id":"b"`)])
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			}
			st, err := h.open(h.client(0))
			if st != nil {
				t.Fatalf("the table opened with %d files", len(st.urls))
			}
			checkLine(t, err, "version 0", "the answer was cut short")
		})
	}
}

// TestHostileSilentServer: a server that accepts and never answers, one
// that stops in the middle of its answer, and one that trickles it a byte
// at a time, each fail within the client's bounds (the timeout for a
// pause, ten of them for a whole answer), with one line.
func TestHostileSilentServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cases := []struct {
		name  string
		query func(h *hostile) func(w http.ResponseWriter, r *http.Request)
		want  string
		limit time.Duration
	}{
		{"never answers", func(h *hostile) func(w http.ResponseWriter, r *http.Request) {
			return func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-h.done:
				}
			}
		}, "the sharing server sent no answer within 300ms", 3*timeout + 2*time.Second + 5*time.Second},
		{"stops mid-answer", func(h *hostile) func(w http.ResponseWriter, r *http.Request) {
			return func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, protocolLine+"\n"+metadataLine[:50])
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-h.done:
				}
			}
		}, "the server sent nothing for 300ms", 5 * time.Second},
		{"trickles", func(h *hostile) func(w http.ResponseWriter, r *http.Request) {
			return func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, protocolLine+"\n"+metadataLine+"\n")
				for {
					if _, err := io.WriteString(w, " "); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-h.done:
						return
					case <-time.After(timeout / 3):
					}
				}
			}
		}, "the answer took longer than 3s", 10*timeout + 5*time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t)
			h.query = tc.query(h)
			start := time.Now()
			st, err := h.open(h.client(timeout))
			took := time.Since(start)
			if st != nil {
				t.Fatal("the table opened")
			}
			checkLine(t, err, "version 0", tc.want)
			if took > tc.limit {
				t.Fatalf("failed after %v, want within %v", took, tc.limit)
			}
		})
	}
}

// TestHostileFileServer: a pre-signed URL whose file server serves another
// size than the add action announced — larger or smaller in its
// Content-Range, a whole file of another length ignoring the range, fewer
// bytes than the range within the size, nothing at an offset the size
// covers, or nothing for good — fails the read with one line naming the
// file: no bytes are served. The same store reads a file served right.
func TestHostileFileServer(t *testing.T) {
	const size = 1000
	data := bytes.Repeat([]byte("0123456789"), size/10)
	cases := []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request, done chan struct{})
		want  string
	}{
		{"right", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
		}, ""},
		{"larger", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(append(data, "more"...)))
		}, "the file server has 1004 bytes for the file, the share announced 1000"},
		{"smaller", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data[:900]))
		}, "the file server has 900 bytes for the file, the share announced 1000"},
		{"no range, other length", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			w.Write(data[:999])
		}, "the file server has 999 bytes for the file, the share announced 1000"},
		{"short range", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", size-1, size))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(data[:500])
		}, "the file server sent 500 bytes of the 1000 at 0, within the announced 1000"},
		{"range not satisfiable", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			w.Header().Set("Content-Range", "bytes */10")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, "the file server has no byte 0, the share announced 1000 bytes"},
		{"cut connection", func(w http.ResponseWriter, r *http.Request, _ chan struct{}) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", size-1, size))
			w.Header().Set("Content-Length", strconv.Itoa(size))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(data[:300])
			w.(http.Flusher).Flush()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		}, "reading through the pre-signed URL: unexpected EOF"},
		{"silent", func(w http.ResponseWriter, r *http.Request, done chan struct{}) {
			select {
			case <-r.Context().Done():
			case <-done:
			}
		}, "reading through the pre-signed URL: the answer took longer than 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t)
			h.query = func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, protocolLine+"\n"+metadataLine+"\n"+fileLine("a", h.srv.URL+"/files/b/t/part-a.parquet", size)+"\n")
			}
			h.files = func(w http.ResponseWriter, r *http.Request) { tc.serve(w, r, h.done) }
			st, err := h.open(h.client(300 * time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := st.Stat(context.Background(), "part-a.parquet"); err != nil || fi.Size != size {
				t.Fatalf("stat: %+v %v", fi, err)
			}
			start := time.Now()
			got, err := storage.ReadRange(context.Background(), st, "part-a.parquet", 0, size)
			if tc.want == "" {
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("a file served right: %d bytes, %v", len(got), err)
				}
				return
			}
			if got != nil {
				t.Fatalf("read %d bytes of a file served wrong", len(got))
			}
			checkLine(t, err, "part-a.parquet: ", tc.want)
			// Four attempts at most (a cut connection is retried), each
			// bounded by the timeout.
			if took := time.Since(start); took > 4*300*time.Millisecond+5*time.Second {
				t.Fatalf("the read failed after %v", took)
			}
			// A read within the file fails too, and a read past the
			// announced size is the end, not a request.
			buf := make([]byte, 10)
			if n, err := st.ReadAt(context.Background(), "part-a.parquet", buf, 500); err == nil {
				t.Fatalf("read %d bytes at 500 of a file served wrong", n)
			}
			if n, err := st.ReadAt(context.Background(), "part-a.parquet", buf, size); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("read at the announced end: %d, %v", n, err)
			}
		})
	}
}
