package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// Hostile Delta Sharing servers at the command line: the command fails
// with exit 1 and one line naming the table, the version and the cause,
// within a bound; it never hangs or prints a table.

// hostileShare is a sharing server whose table is at version 0 and whose
// query answers are written by query; it returns the table's location.
func hostileShare(t *testing.T, query func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Delta-Table-Version", "0")
		if strings.HasSuffix(r.URL.Path, "/query") {
			query(w, r, done)
		}
	}))
	t.Cleanup(func() {
		close(done)
		srv.CloseClientConnections()
		srv.Close()
	})
	profile := filepath.Join(t.TempDir(), "hostile.share")
	b, _ := json.Marshal(map[string]any{"shareCredentialsVersion": 1, "endpoint": srv.URL + "/api", "bearerToken": "dss-hostile-token"})
	if err := os.WriteFile(profile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return profile + "#share.default.t"
}

// checkErrLine fails the test unless the command failed (exit 1) with one
// line on stderr holding every want, within limit.
func checkErrLine(t *testing.T, what string, took, limit time.Duration, stderr string, code int, want ...string) {
	t.Helper()
	line := strings.TrimSpace(stderr)
	if code != 1 || strings.Contains(line, "\n") {
		t.Fatalf("%s: exit %d after %v, want 1 and one line:\n%s", what, code, took, stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Fatalf("%s: %q, want it to hold %q", what, line, w)
		}
	}
	if strings.Contains(line, "dss-hostile-token") || strings.Contains(line, "X-Signature") {
		t.Fatalf("%s: the line holds a secret: %q", what, line)
	}
	if _, rest, ok := strings.Cut(line, ".parquet: "); ok && strings.Contains(rest, ".parquet: ") {
		t.Fatalf("%s: the line names its data file twice: %q", what, line)
	}
	if took > limit {
		t.Fatalf("%s: failed after %v, want within %v", what, took, limit)
	}
	t.Logf("%s, after %v: %s", what, took.Round(time.Millisecond), line)
}

// TestSharingHostileEndlessAnswer: a query answered with one line that
// never ends (512 MiB without a newline) is cut off at 64 MiB.
func TestSharingHostileEndlessAnswer(t *testing.T) {
	bin := mounttest.Binary(t)
	loc := hostileShare(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		io.WriteString(w, `{"protocol":{"deltaProtocol":{"minReaderVersion":1,"minWriterVersion":2}}}`+"\n")
		chunk := bytes.Repeat([]byte(`{"file":`), 1<<17)
		for range 512 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	start := time.Now()
	_, stderr, code := runBin(t, bin, time.Minute, "log", "--json", loc)
	checkErrLine(t, "log", time.Since(start), 45*time.Second, stderr, code, loc, "version 0", "line 2 of the answer is longer than 64 MiB")
}

// TestSharingHostileSilent: a server that accepts the query and never
// answers fails the command within the bound --sharing-timeout sets
// (three attempts), and so does one that stops in the middle of its
// answer.
func TestSharingHostileSilent(t *testing.T) {
	bin := mounttest.Binary(t)
	for _, tc := range []struct {
		name  string
		first string // what the server sends before it goes silent
		want  string
	}{
		{"never answers", "", "the sharing server sent no answer within 500ms"},
		{"stops mid-answer", `{"protocol":{"deltaProtocol":{"minRea`, "the server sent nothing for 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := hostileShare(t, func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				if tc.first != "" {
					io.WriteString(w, tc.first)
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
				case <-done:
				}
			})
			start := time.Now()
			_, stderr, code := runBin(t, bin, time.Minute, "--sharing-timeout", "500ms", "log", "--json", loc)
			checkErrLine(t, "log", time.Since(start), 20*time.Second, stderr, code, loc, "version 0", tc.want)
		})
	}
}

// TestSharingHostileFileServer: pre-signed URLs whose file server serves
// a data file longer or shorter than the add action says fail `deltafs
// cat` with one line naming the data file, and print no row of it; the
// same share served right prints the table.
func TestSharingHostileFileServer(t *testing.T) {
	bin := mounttest.Binary(t)
	name := "dat-basic_append"
	f := startSharing(t, time.Minute, []string{name})
	loc := f.location(name)
	want, stderr, code := runBin(t, bin, time.Minute, "cat", loc)
	if code != 0 || want == "" {
		t.Fatalf("cat of the share served right: exit %d\n%s", code, stderr)
	}
	local, stderr, code := runBin(t, bin, time.Minute, "cat", f.local[name])
	if code != 0 || local != want {
		t.Fatalf("cat by name differs from cat by path (exit %d):\n%s\n%s%s", code, want, local, stderr)
	}
	for _, tc := range []struct {
		name   string
		tamper func(key string, data []byte) []byte
		want   string
	}{
		{"longer", func(key string, data []byte) []byte { return append(data, "trailing"...) }, "bytes for the file, the share announced"},
		{"shorter", func(key string, data []byte) []byte { return data[:len(data)-8] }, "bytes for the file, the share announced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.srv.SetTamper(tc.tamper)
			defer f.srv.SetTamper(nil)
			start := time.Now()
			out, stderr, code := runBin(t, bin, time.Minute, "cat", loc)
			checkErrLine(t, "cat", time.Since(start), 45*time.Second, stderr, code, loc, "version", ".parquet", tc.want)
			if out != "" {
				t.Fatalf("cat printed rows of a table whose files are served wrong:\n%s", out)
			}
		})
	}
}
