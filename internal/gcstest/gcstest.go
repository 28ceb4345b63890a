// Package gcstest runs fake-gcs-server (github.com/fsouza/fake-gcs-server,
// in process, on a real 127.0.0.1 listener) for tests, uploads local table
// directories to it, and serves the other ends of Google's credential
// chain: an OAuth token endpoint for service-account key files and a
// metadata server. Every server is stopped by t.Cleanup.
//
// Toxiproxy and the goroutine leak check are internal/s3test's (StartProxy,
// CheckGoroutines): they know nothing of S3.
package gcstest

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Fake is an in-process fake-gcs-server (memory backend) on a loopback
// listener. Stop and Start restart it on the same address with the same
// objects, like a server that goes away and comes back.
type Fake struct {
	Endpoint string // http://127.0.0.1:port: --gcs-endpoint
	Host     string // 127.0.0.1:port: STORAGE_EMULATOR_HOST
	Server   *fakestorage.Server

	handler http.Handler
	mu      sync.Mutex
	srv     *http.Server
	done    chan struct{}
	open    atomic.Int64
}

// NewFake starts fake-gcs-server; wrap, if not nil, wraps its handler
// (faults, authentication: see RequireToken, ErrorWhile).
func NewFake(t testing.TB, wrap func(http.Handler) http.Handler) *Fake {
	t.Helper()
	f, err := ServeFake(wrap)
	if err != nil {
		t.Fatalf("gcstest: %v", err)
	}
	t.Cleanup(f.Stop)
	return f
}

// ServeFake is NewFake outside a test (benchmarks): the caller stops it.
func ServeFake(wrap func(http.Handler) http.Handler) (*Fake, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true,
		Scheme:     "http",
		Host:       "127.0.0.1",
		Port:       uint16(addr.Port),
		// The XML API (the SDK's reads) answers on this host.
		PublicHost:  ln.Addr().String(),
		ExternalURL: "http://" + ln.Addr().String(),
		Writer:      io.Discard,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	host := ln.Addr().String()
	fh := srv.HTTPHandler()
	// GCS serves the XML API whatever name a client used for it (through
	// a proxy, the proxy's address): the fake only on its public host.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = host
		fh.ServeHTTP(w, r)
	})
	f := &Fake{Endpoint: "http://" + host, Host: host, Server: srv, handler: h}
	if wrap != nil {
		f.handler = wrap(f.handler)
	}
	f.serve(ln)
	return f, nil
}

// OpenConns is the number of client connections open now.
func (f *Fake) OpenConns() int64 { return f.open.Load() }

func (f *Fake) serve(ln net.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	srv := &http.Server{
		Handler: f.handler,
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				f.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				f.open.Add(-1)
			}
		},
	}
	f.srv = srv
	done := make(chan struct{})
	f.done = done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
}

// Stop closes the listener and every connection and waits for the server
// to stop; the objects stay. Stopping a stopped server does nothing.
func (f *Fake) Stop() {
	f.mu.Lock()
	srv, done := f.srv, f.done
	f.srv = nil
	f.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-done
}

// Start restarts a stopped server on the same address (retrying for up to
// 5 s while the port is busy).
func (f *Fake) Start(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	running := f.srv != nil
	f.mu.Unlock()
	if running {
		return
	}
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", f.Host)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("gcstest: restart on %s: %v", f.Host, err)
	}
	f.serve(ln)
}

// CreateBucket creates bucket (an existing one is fine).
func (f *Fake) CreateBucket(bucket string) {
	f.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
}

// Put stores one object.
func (f *Fake) Put(bucket, key string, data []byte) {
	f.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: key}, Content: data})
}

// Delete removes one object.
func (f *Fake) Delete(bucket, key string) error {
	return f.Server.Backend().DeleteObject(bucket, key)
}

// Updated is the update time of an object as the JSON API reports it.
func (f *Fake) Updated(bucket, key string) (time.Time, error) {
	o, err := f.Server.GetObject(bucket, key)
	if err != nil {
		return time.Time{}, err
	}
	// The JSON API prints RFC 3339 with the server's precision; read it
	// back the same way a client does.
	b, err := o.Updated.MarshalText()
	if err != nil {
		return time.Time{}, err
	}
	var tm time.Time
	err = tm.UnmarshalText(b)
	return tm, err
}

// UploadDir uploads every regular file under localDir to bucket under
// prefix (relative paths as keys; prefix "" for the bucket root), creating
// the bucket, and returns the number of files.
func UploadDir(t testing.TB, f *Fake, bucket, prefix, localDir string) int {
	t.Helper()
	n, err := Upload(f, bucket, prefix, localDir)
	if err != nil {
		t.Fatalf("gcstest: upload %s: %v", localDir, err)
	}
	return n
}

// Upload is UploadDir outside a test.
func Upload(f *Fake, bucket, prefix, localDir string) (int, error) {
	f.CreateBucket(bucket)
	if prefix != "" && prefix[len(prefix)-1] != '/' {
		prefix += "/"
	}
	n := 0
	err := filepath.WalkDir(localDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(localDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Put(bucket, prefix+filepath.ToSlash(rel), data)
		n++
		return nil
	})
	return n, err
}

// Keys lists the objects of bucket.
func (f *Fake) Keys(bucket string) ([]string, error) {
	objs, _, err := f.Server.ListObjectsWithOptions(bucket, fakestorage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name
	}
	return out, nil
}

// WriteError writes a JSON API error answer.
func WriteError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": message,
		"errors": []map[string]any{{"message": message, "reason": http.StatusText(status)}}}})
}

// ErrorWhile answers every request with status while on() is true
// (throttling: 429; an outage: 503).
func ErrorWhile(on func() bool, status int, message string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on() {
				WriteError(w, status, message)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// RequireToken answers 401, as GCS does, every request whose
// Authorization is not "Bearer token", and 403 the requests that carry
// the token denied.
func RequireToken(token, denied string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Header.Get("Authorization") {
			case "Bearer " + token:
				next.ServeHTTP(w, r)
			case "Bearer " + denied:
				WriteError(w, http.StatusForbidden, "caller does not have storage.objects.list access to the Google Cloud Storage bucket.")
			default:
				WriteError(w, http.StatusUnauthorized, "Invalid Credentials")
			}
		})
	}
}
