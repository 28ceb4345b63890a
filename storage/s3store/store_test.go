package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

func randBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestParseLocation(t *testing.T) {
	good := []struct{ loc, bucket, prefix, location string }{
		{"s3://b", "b", "", "s3://b"},
		{"s3://b/", "b", "", "s3://b"},
		{"s3://my-bucket/a/b/table", "my-bucket", "a/b/table/", "s3://my-bucket/a/b/table"},
		{"s3://my.bucket/table/", "my.bucket", "table/", "s3://my.bucket/table"},
	}
	for _, c := range good {
		b, p, err := s3store.ParseLocation(c.loc)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseLocation(%q) = %q, %q, %v; want %q, %q", c.loc, b, p, err, c.bucket, c.prefix)
		}
		st, err := s3store.New(context.Background(), c.loc, testOptions("http://127.0.0.1:1"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Location() != c.location {
			t.Errorf("Location() = %q, want %q", st.Location(), c.location)
		}
		st.Close()
	}
	const secret = "sEcReT-in-the-url"
	bad := []string{"s3://", "s3:///x", "http://b/x", "s3://b:9000/x", "s3://b/x?versionId=1", "s3://b/x#f",
		"s3://AKIAXXX:" + secret + "@b/x", "s3://AKIAXXX:" + secret + "@b/x%zz"}
	for _, loc := range bad {
		_, _, err := s3store.ParseLocation(loc)
		if err == nil {
			t.Errorf("ParseLocation(%q) succeeded", loc)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseLocation error repeats the secret: %v", err)
		}
		if _, err := storage.Open(context.Background(), loc, storage.Options{}); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("storage.Open(%q) = %v", loc, err)
		}
	}
}

// setEnvCreds points the AWS configuration chain at the test credentials
// only: no shared files, no IMDS.
func setEnvCreds(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
}

// TestStorageOpen opens through storage.Open with the CLI's options and
// credentials from the environment, and with the endpoint from
// AWS_ENDPOINT_URL_S3.
func TestStorageOpen(t *testing.T) {
	checkGoroutines(t)
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	s3test.Put(t, ep, bucket, "t/_delta_log/00000000000000000000.json", []byte("{}\n"))
	setEnvCreds(t)
	check := func(st storage.Storage, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer st.(io.Closer).Close()
		if _, ok := st.(*s3store.Store); !ok {
			t.Fatalf("storage.Open returned %T", st)
		}
		if st.Location() != "s3://"+bucket+"/t" {
			t.Errorf("Location() = %q", st.Location())
		}
		infos, err := st.List(ctxT(t), "_delta_log/", "")
		if err != nil || len(infos) != 1 {
			t.Fatalf("List = %v, %v", infos, err)
		}
	}
	check(storage.Open(ctxT(t), "s3://"+bucket+"/t/", storage.Options{S3: storage.S3Options{Endpoint: ep, PathStyle: true}}))
	t.Setenv("AWS_ENDPOINT_URL_S3", ep)
	check(storage.Open(ctxT(t), "s3://"+bucket+"/t", storage.Options{S3: storage.S3Options{PathStyle: true, Region: "eu-west-1"}}))
}

func TestNoCredentials(t *testing.T) {
	setEnvCreds(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	start := time.Now()
	_, err := s3store.New(ctxT(t), "s3://b/t", s3store.Options{S3Options: storage.S3Options{Endpoint: "http://127.0.0.1:1", PathStyle: true}})
	if err == nil || !strings.Contains(err.Error(), "no usable AWS credentials") || !strings.Contains(err.Error(), "--s3-anonymous") {
		t.Fatalf("New without credentials = %v", err)
	}
	t.Logf("%v (%v)", err, time.Since(start).Round(time.Millisecond))
	// Anonymous needs none.
	st, err := s3store.New(ctxT(t), "s3://b/t", s3store.Options{S3Options: storage.S3Options{Endpoint: "http://127.0.0.1:1", PathStyle: true, Anonymous: true}})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

func TestAnonymous(t *testing.T) {
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	data := randBytes(1, 1000)
	s3test.Put(t, ep, bucket, "t/part-0.parquet", data)
	o := testOptions(ep)
	o.Credentials = nil
	o.S3Options.Anonymous = true
	st := open(t, "s3://"+bucket+"/t", o)
	b, err := storage.ReadAll(ctxT(t), st, "part-0.parquet")
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("ReadAll = %d bytes, %v", len(b), err)
	}
	// Through a server that records Authorization headers: none are sent.
	fake := s3test.NewFake(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a := r.Header.Get("Authorization"); a != "" && r.Method == http.MethodHead {
				t.Errorf("anonymous request carries Authorization %q", a)
			}
			h.ServeHTTP(w, r)
		})
	})
	s3test.CreateBucket(t, fake.Endpoint, "anon")
	s3test.Put(t, fake.Endpoint, "anon", "k", []byte("x"))
	o.S3Options.Endpoint = fake.Endpoint
	st2 := open(t, "s3://anon", o)
	if _, err := st2.Stat(ctxT(t), "k"); err != nil {
		t.Fatal(err)
	}
}

// TestPinning: once a key was read, a change behind the store's back is
// ErrChanged naming the key, whether the server honours If-Match (moto,
// S3) or not (gofakes3: the response's ETag is checked).
func TestPinning(t *testing.T) {
	checkGoroutines(t)
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	st := open(t, "s3://"+bucket+"/t", testOptions(ep))
	ctx := ctxT(t)
	v1, v2 := randBytes(1, 5000), randBytes(2, 5000)
	s3test.Put(t, ep, bucket, "t/a.parquet", v1)
	s3test.Put(t, ep, bucket, "t/b.parquet", v1)
	s3test.Put(t, ep, bucket, "t/c.parquet", v1)
	s3test.Put(t, ep, bucket, "t/"+remote.LastCheckpointKey, []byte(`{"version":1}`))

	// a: pinned by Stat, same size, other bytes.
	if _, err := st.Stat(ctx, "a.parquet"); err != nil {
		t.Fatal(err)
	}
	// b: pinned by a read.
	if _, err := st.ReadAt(ctx, "b.parquet", make([]byte, 10), 100); err != nil {
		t.Fatal(err)
	}
	// c: pinned by a read, then grows.
	if _, err := st.ReadAt(ctx, "c.parquet", make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ReadAll(ctx, st, remote.LastCheckpointKey); err != nil {
		t.Fatal(err)
	}
	s3test.Put(t, ep, bucket, "t/a.parquet", v2)
	s3test.Put(t, ep, bucket, "t/b.parquet", v2)
	s3test.Put(t, ep, bucket, "t/c.parquet", append(v1, 1, 2, 3))
	s3test.Put(t, ep, bucket, "t/"+remote.LastCheckpointKey, []byte(`{"version":22}`))

	for _, key := range []string{"a.parquet", "b.parquet", "c.parquet"} {
		n, err := st.ReadAt(ctx, key, make([]byte, 100), 0)
		if !errors.Is(err, storage.ErrChanged) || n != 0 {
			t.Errorf("ReadAt(%s) after a change = %d, %v; want ErrChanged", key, n, err)
			continue
		}
		if !strings.Contains(err.Error(), "s3://"+bucket+"/t/"+key) {
			t.Errorf("error %q does not name the object", err)
		}
		t.Logf("%v", err)
		// The pin stays: Stat answers the first identity, reads keep failing.
		oi, err := st.Stat(ctx, key)
		if err != nil || oi.Size != 5000 {
			t.Errorf("Stat(%s) = %+v, %v", key, oi, err)
		}
		if _, err := st.ReadRanges(ctx, key, []s3store.Range{{Off: 0, Len: 10}, {Off: 4000, Len: 10}}); !errors.Is(err, storage.ErrChanged) {
			t.Errorf("ReadRanges(%s) = %v, want ErrChanged", key, err)
		}
	}
	// _last_checkpoint is rewritten in place by design: never pinned.
	b, err := storage.ReadAll(ctx, st, remote.LastCheckpointKey)
	if err != nil || string(b) != `{"version":22}` {
		t.Errorf("_last_checkpoint = %q, %v", b, err)
	}
	// A Put through the store forgets the pin.
	if err := st.Put(ctx, "a.parquet", v2, false); err != nil {
		t.Fatal(err)
	}
	if b, err := storage.ReadAll(ctx, st, "a.parquet"); err != nil || !bytes.Equal(b, v2) {
		t.Errorf("after Put: %d bytes, %v", len(b), err)
	}
	// A key deleted after pinning reads as not existing (vacuumed file).
	if _, err := s3test.NewClient(ep).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String("t/b.parquet")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadAt(ctx, "b.parquet", make([]byte, 10), 0); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("ReadAt of a deleted pinned key = %v, want ErrNotExist", err)
	}
	if s := st.Stats(); s.Pinned < 3 {
		t.Errorf("Stats.Pinned = %d", s.Pinned)
	}
}

func TestReadRanges(t *testing.T) {
	checkGoroutines(t)
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	data := randBytes(3, 4<<20)
	s3test.Put(t, ep, bucket, "t/f.parquet", data)
	o := testOptions(ep)
	o.CoalesceGap = 64 << 10
	o.MaxCoalesce = 1 << 20
	st := open(t, "s3://"+bucket+"/t", o)
	ctx := ctxT(t)

	ranges := []s3store.Range{
		{Off: 3 << 20, Len: 1000},        // far: its own GET
		{Off: 0, Len: 100},               // 0..100
		{Off: 100, Len: 50},              // touching
		{Off: 60 << 10, Len: 10},         // gap just below 64 KiB from 150: merged
		{Off: 50, Len: 20},               // overlapping, unsorted
		{Off: 2 << 20, Len: 0},           // empty: no request
		{Off: 1 << 20, Len: 100},         // far: own GET
		{Off: 1<<20 + 200000, Len: 5000}, // gap 200 KB: own GET
		{Off: 4<<20 - 10, Len: 10},       // the last bytes: own GET
	}
	before := st.Stats()
	got, err := st.ReadRanges(ctx, "f.parquet", ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ranges {
		if !bytes.Equal(got[i], data[r.Off:r.Off+r.Len]) {
			t.Errorf("range %d (%d+%d): wrong bytes", i, r.Off, r.Len)
		}
		if cap(got[i]) != len(got[i]) {
			t.Errorf("range %d: capacity %d > length %d", i, cap(got[i]), len(got[i]))
		}
	}
	after := st.Stats()
	// One HEAD to pin (several GETs, unpinned key), five GETs.
	if g, h := after.Gets-before.Gets, after.Heads-before.Heads; g != 5 || h != 1 {
		t.Errorf("%d GETs, %d HEADs; want 5 and 1", g, h)
	}
	if c := after.RangesCoalesced - before.RangesCoalesced; c != 3 {
		t.Errorf("coalesced %d ranges, want 3", c)
	}
	// Past the end.
	if _, err := st.ReadRanges(ctx, "f.parquet", []s3store.Range{{Off: 0, Len: 10}, {Off: 4<<20 - 10, Len: 11}}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("range past the end: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := st.ReadRanges(ctx, "f.parquet", []s3store.Range{{Off: 5 << 20, Len: 10}}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("range after the end: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := st.ReadRanges(ctx, "missing", []s3store.Range{{Off: 0, Len: 10}}); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("missing key: %v, want ErrNotExist", err)
	}
	// Many random ranges against the reference.
	r := rand.New(rand.NewSource(9))
	var many []s3store.Range
	for i := 0; i < 300; i++ {
		off := r.Int63n(int64(len(data)) - 70000)
		many = append(many, s3store.Range{Off: off, Len: r.Int63n(70000)})
	}
	got, err = st.ReadRanges(ctx, "f.parquet", many)
	if err != nil {
		t.Fatal(err)
	}
	for i, rg := range many {
		if !bytes.Equal(got[i], data[rg.Off:rg.Off+rg.Len]) {
			t.Fatalf("random range %d: wrong bytes", i)
		}
	}
	s := st.Stats()
	t.Logf("stats: %+v", s)
	if s.MaxInFlight < 2 {
		t.Errorf("MaxInFlight = %d: GETs did not run in parallel", s.MaxInFlight)
	}
}

// TestConcurrencyBound: no more than MaxConcurrency requests in flight.
func TestConcurrencyBound(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	inServer, maxInServer := 0, 0
	fake := s3test.NewFake(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			inServer++
			maxInServer = max(maxInServer, inServer)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			h.ServeHTTP(w, r)
			mu.Lock()
			inServer--
			mu.Unlock()
		})
	})
	bucket := newBucket(t, fake.Endpoint)
	data := randBytes(4, 1<<20)
	s3test.Put(t, fake.Endpoint, bucket, "f", data)
	o := testOptions(fake.Endpoint)
	o.MaxConcurrency = 4
	st := open(t, "s3://"+bucket, o)
	if _, err := st.Stat(ctxT(t), "f"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	maxInServer = 0
	mu.Unlock()
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			p := make([]byte, 1000)
			if _, err := st.ReadAt(ctxT(t), "f", p, int64(g)*1000); err != nil || !bytes.Equal(p, data[g*1000:g*1000+1000]) {
				t.Errorf("read %d: %v", g, err)
			}
		}(g)
	}
	wg.Wait()
	s := st.Stats()
	if s.MaxInFlight != 4 || maxInServer > 4 {
		t.Errorf("MaxInFlight = %d, server saw %d at once; want 4", s.MaxInFlight, maxInServer)
	}
}

// TestIgnoresIfNoneMatch: a server that drops If-None-Match is detected by
// the probe and conditional puts are refused; the probe object is gone.
func TestIgnoresIfNoneMatch(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, s3test.StripHeader("If-None-Match"))
	bucket := newBucket(t, fake.Endpoint)
	st := open(t, "s3://"+bucket+"/t", testOptions(fake.Endpoint))
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		err := st.Put(ctx, "_delta_log/00000000000000000000.json", []byte("{}"), true)
		if err == nil || !strings.Contains(err.Error(), "s3 store ignores If-None-Match; concurrent commits would be unsafe") {
			t.Fatalf("conditional Put on a server ignoring If-None-Match = %v", err)
		}
		if errors.Is(err, storage.ErrExist) {
			t.Fatalf("refusal wraps ErrExist: %v", err)
		}
		t.Logf("%v", err)
	}
	// The probe ran once (2 puts, 1 delete) and left nothing.
	if s := st.Stats(); s.Puts != 2 || s.Deletes != 1 {
		t.Errorf("%d puts, %d deletes; want 2 and 1", s.Puts, s.Deletes)
	}
	if infos, err := st.List(ctx, "", ""); err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want nothing", infos, err)
	}
	// Unconditional puts still work.
	if err := st.Put(ctx, "x", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
}

// TestServerIgnoresStartAfterAndRange: a server that ignores StartAfter
// (gofakes3's directfs, some others) or Range still gives right answers.
func TestServerIgnoresStartAfterAndRange(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Has("start-after") {
				q.Del("start-after")
				r.URL.RawQuery = q.Encode()
			}
			r.Header.Del("Range")
			h.ServeHTTP(w, r)
		})
	})
	bucket := newBucket(t, fake.Endpoint)
	for i := 0; i < 5; i++ {
		s3test.Put(t, fake.Endpoint, bucket, fmt.Sprintf("t/_delta_log/%020d.json", i), []byte("{}"))
	}
	data := randBytes(5, 100000)
	s3test.Put(t, fake.Endpoint, bucket, "t/f", data)
	st := open(t, "s3://"+bucket+"/t", testOptions(fake.Endpoint))
	ctx := ctxT(t)
	infos, err := st.List(ctx, "_delta_log/", fmt.Sprintf("_delta_log/%020d.json", 2))
	if err != nil || len(infos) != 2 || infos[0].Key != fmt.Sprintf("_delta_log/%020d.json", 3) {
		t.Fatalf("List after 2 = %v, %v", infos, err)
	}
	p := make([]byte, 1000)
	if n, err := st.ReadAt(ctx, "f", p, 5000); n != 1000 || err != nil || !bytes.Equal(p, data[5000:6000]) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if n, err := st.ReadAt(ctx, "f", p, 99500); n != 500 || err != io.EOF || !bytes.Equal(p[:500], data[99500:]) {
		t.Fatalf("ReadAt at the end = %d, %v", n, err)
	}
}

// TestPutConflictAndLostResponse: a 409 ConditionalRequestConflict is
// retried; a conditional put whose response was lost after the server
// stored it is reported as done (the retry's 412 is checked against the
// stored bytes).
func TestPutConflictAndLostResponse(t *testing.T) {
	checkGoroutines(t)
	var conflicted sync.Once
	conflict := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_delta_log/") {
				done := false
				conflicted.Do(func() {
					done = true
					s3test.WriteError(w, r, http.StatusConflict, "ConditionalRequestConflict", "A conflicting conditional operation is currently in progress against this resource.")
				})
				if done {
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	var lost sync.Once
	dropFirstCommit := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/00000000000000000005.json") {
				done := false
				lost.Do(func() {
					done = true
					h.ServeHTTP(httptestRecorder{}, r) // stored...
					hj, ok := w.(http.Hijacker)
					if !ok {
						t.Error("no hijacker")
						return
					}
					c, _, _ := hj.Hijack()
					c.Close() // ...but the answer is lost
				})
				if done {
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	fake := s3test.NewFake(t, s3test.Chain(conflict, dropFirstCommit))
	bucket := newBucket(t, fake.Endpoint)
	st := open(t, "s3://"+bucket+"/t", testOptions(fake.Endpoint))
	ctx := ctxT(t)
	if err := st.Put(ctx, "_delta_log/00000000000000000004.json", []byte("four"), true); err != nil {
		t.Fatalf("Put after a 409: %v", err)
	}
	if err := st.Put(ctx, "_delta_log/00000000000000000005.json", []byte("five"), true); err != nil {
		t.Fatalf("Put with a lost response: %v", err)
	}
	if b, err := storage.ReadAll(ctx, st, "_delta_log/00000000000000000005.json"); err != nil || string(b) != "five" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	// Someone else's commit is still ErrExist.
	if err := st.Put(ctx, "_delta_log/00000000000000000005.json", []byte("other"), true); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("Put over another's commit = %v", err)
	}
	if s := st.Stats(); s.Retries < 2 {
		t.Errorf("Retries = %d, want >= 2", s.Retries)
	}
}

// httptestRecorder discards a response.
type httptestRecorder struct{}

func (httptestRecorder) Header() http.Header         { return http.Header{} }
func (httptestRecorder) Write(p []byte) (int, error) { return len(p), nil }
func (httptestRecorder) WriteHeader(int)             {}

func TestContextCanceled(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	bucket := newBucket(t, fake.Endpoint)
	s3test.Put(t, fake.Endpoint, bucket, "f", []byte("data"))
	st := open(t, "s3://"+bucket, testOptions(fake.Endpoint))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := st.ReadAt(ctx, "f", make([]byte, 4), 0)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("ReadAt with an expiring context = %v after %v", err, time.Since(start))
	}
	t.Logf("%v", err)
}

// TestUploadDir uploads a real table directory and reads it back.
func TestUploadDir(t *testing.T) {
	dir := "../../testdata/delta/dat-with_checkpoint"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no test table: ", err)
	}
	ep := s3test.StartGofakes3(t)
	n := s3test.UploadDir(t, ep, "tables", "dat/with_checkpoint", dir)
	local, _ := storage.NewLocal(dir)
	st := open(t, "s3://tables/dat/with_checkpoint", testOptions(ep))
	ctx := ctxT(t)
	want, err := local.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, "", "")
	if err != nil || len(got) != len(want) || len(got) != n {
		t.Fatalf("List: %d objects (%v), local %d, uploaded %d", len(got), err, len(want), n)
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Size != want[i].Size {
			t.Fatalf("object %d: %+v, local %+v", i, got[i], want[i])
		}
		a, err1 := storage.ReadAll(ctx, st, got[i].Key)
		b, err2 := storage.ReadAll(ctx, local, got[i].Key)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s: %v %v", got[i].Key, err1, err2)
		}
	}
}

// TestCloseLeavesNothing: after a burst of parallel reads and Close, the
// server sees no open connection and no goroutine is left.
func TestCloseLeavesNothing(t *testing.T) {
	checkGoroutines(t)
	fake := s3test.NewFake(t, nil)
	bucket := newBucket(t, fake.Endpoint)
	data := randBytes(6, 1<<20)
	s3test.Put(t, fake.Endpoint, bucket, "f", data)
	o := testOptions(fake.Endpoint)
	o.CoalesceGap = -1
	st, err := s3store.New(ctxT(t), "s3://"+bucket, o)
	if err != nil {
		t.Fatal(err)
	}
	var ranges []s3store.Range
	for i := int64(0); i < 16; i++ {
		ranges = append(ranges, s3store.Range{Off: i * 65536, Len: 1000})
	}
	if _, err := st.ReadRanges(ctxT(t), "f", ranges); err != nil {
		t.Fatal(err)
	}
	if n := fake.OpenConns(); n < 2 {
		t.Fatalf("%d connections open before Close, want several", n)
	}
	if s := st.Stats(); s.Gets != 16 {
		t.Errorf("%d GETs, want 16", s.Gets)
	}
	st.Close()
	deadline := time.Now().Add(5 * time.Second)
	for fake.OpenConns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fake.OpenConns(); n != 0 {
		t.Fatalf("%d connections open after Close", n)
	}
}

// TestSecretNotLogged: a request failing after retries, with debug logging
// on, mentions the secret neither in its error nor in the log.
func TestSecretNotLogged(t *testing.T) {
	checkGoroutines(t)
	const secret = "kn0wn/SECRET/value/never/to/be/printed"
	wrap, _ := s3test.Throttle(-1)
	fake := s3test.NewFake(t, wrap)
	var logBuf bytes.Buffer
	var mu sync.Mutex
	o := testOptions(fake.Endpoint)
	o.Credentials = aws.NewCredentialsCache(staticCreds{"AKIAKNOWNKEY00000000", secret})
	o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := open(t, "s3://b/t", o)
	_, err := st.ReadAt(ctxT(t), "k", make([]byte, 10), 0)
	if err == nil {
		t.Fatal("read succeeded")
	}
	_, err2 := st.List(ctxT(t), "", "")
	err3 := st.Put(ctxT(t), "k", []byte("x"), true)
	mu.Lock()
	log := logBuf.String()
	mu.Unlock()
	if !strings.Contains(log, "retrying") {
		t.Errorf("no retries logged:\n%s", log)
	}
	for _, s := range []string{err.Error(), err2.Error(), err3.Error(), log} {
		if strings.Contains(s, secret) || strings.Contains(s, "kn0wn") {
			t.Errorf("the secret is printed: %s", s)
		}
	}
	t.Logf("%v\n%s", err, log)
}

type staticCreds struct{ ak, sk string }

func (c staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: c.ak, SecretAccessKey: c.sk, Source: "test"}, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestFolderMarkers: zero-byte "dir/" objects made by consoles and Hadoop
// are not listed.
func TestFolderMarkers(t *testing.T) {
	ep := s3test.StartGofakes3(t)
	bucket := newBucket(t, ep)
	for _, k := range []string{"t/", "t/_delta_log/", "t/_delta_log/00000000000000000000.json", "t/date=1/", "t/date=1/part-0.parquet"} {
		s3test.Put(t, ep, bucket, k, nil)
	}
	st := open(t, "s3://"+bucket+"/t", testOptions(ep))
	infos, err := st.List(ctxT(t), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, oi := range infos {
		got = append(got, oi.Key)
	}
	if strings.Join(got, ",") != "_delta_log/00000000000000000000.json,date=1/part-0.parquet" {
		t.Fatalf("List = %q", got)
	}
}
