// Package gcstest runs fake-gcs-server (github.com/fsouza/fake-gcs-server,
// in process, on a real 127.0.0.1 listener) for tests, uploads local table
// directories to it, and serves the other ends of Google's credential
// chain: an OAuth token endpoint for service-account key files and a
// metadata server. Every server is stopped by t.Cleanup.
//
// Toxiproxy, the goroutine leak check and the restartable loopback server
// are storage/cloudtest's.
package gcstest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Fake is an in-process fake-gcs-server (memory backend) on a loopback
// listener. Stop and Start restart it on the same address with the same
// objects, like a server that goes away and comes back.
type Fake struct {
	Endpoint string // http://127.0.0.1:port: --gcs-endpoint
	Host     string // 127.0.0.1:port: STORAGE_EMULATOR_HOST
	Server   *fakestorage.Server

	*cloudtest.Loopback // OpenConns, Stop, Start
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
	ln, err := cloudtest.Listen()
	if err != nil {
		return nil, err
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
	var handler http.Handler = h
	if wrap != nil {
		handler = wrap(handler)
	}
	return &Fake{Endpoint: "http://" + host, Host: host, Server: srv, Loopback: cloudtest.ServeLoopback(ln, handler)}, nil
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
	return cloudtest.WalkFiles(localDir, func(rel string, data []byte) error {
		f.Put(bucket, prefix+rel, data)
		return nil
	})
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
