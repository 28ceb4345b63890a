package gcsstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/remote"
)

// authOptions reach endpoint with authentication (Google's chain, as set
// in the environment), logging at debug level into logs.
func authOptions(endpoint string, logs io.Writer) gcsstore.Options {
	o := testOptions(endpoint)
	o.GCSOptions.Anonymous = false
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o
}

// TestCredentials: the credential chain end to end, each way a user
// configures it, against a server that checks the token; and every way it
// fails, as one line naming the table and the cause, with no secret in
// the error or in the debug log.
func TestCredentials(t *testing.T) {
	const good, denied = "ya29.deltafs-good-token-0123456789", "ya29.deltafs-denied-token-9876543210"
	f := gcstest.NewFake(t, gcstest.RequireToken(good, denied))
	f.Put("b", "t/_delta_log/00000000000000000000.json", []byte("{}\n"))
	tokens := gcstest.StartTokenServer(t, good)
	deniedTokens := gcstest.StartTokenServer(t, denied)
	wrongTokens := gcstest.StartTokenServer(t, "ya29.deltafs-unknown-token-000")
	refusing := gcstest.StartTokenServer(t, good)
	refusing.Refuse.Store(true)
	dir := t.TempDir()
	sa := func(ts *gcstest.TokenServer) gcstest.ServiceAccount {
		d := t.TempDir()
		return gcstest.WriteServiceAccount(t, d, ts.URL)
	}
	goodSA, deniedSA, wrongSA, refusedSA := sa(tokens), sa(deniedTokens), sa(wrongTokens), sa(refusing)
	secrets := []string{good, denied, "ya29.deltafs-unknown-token-000", "PRIVATE KEY", goodSA.KeyID}
	for _, k := range []gcstest.ServiceAccount{goodSA, refusedSA} {
		secrets = append(secrets, strings.Split(k.PrivateKey, "\n")[1])
	}

	for _, tc := range []struct {
		name  string
		env   map[string]string
		loc   string
		want  []string // in the error; none: it works
		isErr error
	}{
		{name: "service account key file", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": goodSA.Path}, loc: "gs://b/t"},
		{name: "metadata server", env: map[string]string{"GCE_METADATA_HOST": gcstest.StartMetadata(t, good)}, loc: "gs://b/t"},
		{name: "key refused by the token endpoint", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": refusedSA.Path}, loc: "gs://b/t",
			want: []string{"gs://b/t: invalid credentials: the token endpoint refused them", "invalid_grant"}},
		{name: "token refused by the server", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": wrongSA.Path}, loc: "gs://b/t",
			want: []string{"gs://b/t: invalid credentials: the server refused the access token", "HTTP 401"}},
		{name: "access denied", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": deniedSA.Path}, loc: "gs://b/t",
			want: []string{"gs://b/t: access denied (check the credentials' roles"}},
		{name: "key file missing", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": dir + "/nope.json"}, loc: "gs://b/t",
			want: []string{"gs://b/t: no usable Google credentials", "nope.json"}},
		{name: "metadata server down", loc: "gs://b/t",
			want: []string{"gs://b/t: cannot get an access token"}},
		{name: "missing bucket", env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": goodSA.Path}, loc: "gs://nobucket/t",
			want: []string{"gs://nobucket/t: bucket nobucket does not exist"}, isErr: storage.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gcstest.Env(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var logs testkit.SyncBuffer
			ctx := ctxT(t)
			st, err := gcsstore.New(ctx, tc.loc, authOptions(f.Endpoint, &logs))
			if err == nil {
				defer st.Close()
				_, err = st.List(ctx, "_delta_log/", "")
			}
			if err == nil {
				var b []byte
				b, err = storage.ReadAll(ctx, st, "_delta_log/00000000000000000000.json")
				if err == nil && string(b) != "{}\n" {
					t.Fatalf("read %q", b)
				}
			}
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Fatalf("%v", err)
			case len(tc.want) > 0 && err == nil:
				t.Fatalf("no error, want %q", tc.want)
			case err != nil:
				msg := err.Error()
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%q does not say %q", msg, w)
					}
				}
				if strings.Contains(msg, "\n") || strings.Count(msg, tc.loc) != 1 {
					t.Errorf("%q: want one line naming the table once", msg)
				}
				if tc.isErr != nil && !errors.Is(err, tc.isErr) {
					t.Errorf("%v is not %v", err, tc.isErr)
				}
				if tc.name != "missing bucket" && !storage.IsTableWide(err) {
					t.Errorf("%v: a credential problem must be table-wide", err)
				}
				t.Logf("%s", msg)
			}
			all := logs.String()
			if err != nil {
				all += err.Error()
			}
			for _, s := range secrets {
				if strings.Contains(all, s) {
					t.Fatalf("a secret (%.12s...) is in the error or the log:\n%s", s, all)
				}
			}
		})
	}
}

// TestEmulatorEnv: STORAGE_EMULATOR_HOST alone reaches fake-gcs-server,
// without credentials, as Google's SDK does.
func TestEmulatorEnv(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	f.Put("b", "t/k", []byte("hello"))
	t.Setenv(gcsstore.EmulatorEnv, f.Host)
	st := open(t, "gs://b/t", gcsstore.Options{Tuning: remote.Tuning{Logger: slog.New(slog.DiscardHandler)}})
	b, err := storage.ReadAll(ctxT(t), st, "k")
	if err != nil || string(b) != "hello" {
		t.Fatalf("%q, %v", b, err)
	}
}

// TestChangedObject: an object replaced after its first read fails later
// reads with ErrChanged, never with bytes of the new one; a Put forgets
// the pin; _last_checkpoint is never pinned.
func TestChangedObject(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	f.Put("b", "t/k", []byte("first version"))
	f.Put("b", "t/_delta_log/_last_checkpoint", []byte(`{"version":1}`))
	st := open(t, "gs://b/t", testOptions(f.Endpoint))
	ctx := ctxT(t)
	buf := make([]byte, 5)
	if _, err := st.ReadAt(ctx, "k", buf, 0); err != nil || string(buf) != "first" {
		t.Fatalf("%q %v", buf, err)
	}
	if _, err := storage.ReadAll(ctx, st, "_delta_log/_last_checkpoint"); err != nil {
		t.Fatal(err)
	}
	f.Put("b", "t/k", []byte("other version"))
	f.Put("b", "t/_delta_log/_last_checkpoint", []byte(`{"version":22}`))
	_, err := st.ReadAt(ctx, "k", buf, 6)
	if !errors.Is(err, storage.ErrChanged) || !strings.HasPrefix(err.Error(), "gs://b/t/k: object changed") {
		t.Fatalf("read after a replace: %v, want ErrChanged naming the object", err)
	}
	if b, err := storage.ReadAll(ctx, st, "_delta_log/_last_checkpoint"); err != nil || string(b) != `{"version":22}` {
		t.Fatalf("_last_checkpoint: %q %v", b, err)
	}
	if err := st.Put(ctx, "k", []byte("third"), false); err != nil {
		t.Fatal(err)
	}
	if b, err := storage.ReadAll(ctx, st, "k"); err != nil || string(b) != "third" {
		t.Fatalf("after Put: %q %v", b, err)
	}
	if _, err := st.Stat(ctx, "missing"); !errors.Is(err, storage.ErrNotExist) || err.Error() != "gs://b/t/missing: object does not exist" {
		t.Fatalf("missing: %v", err)
	}
}

// TestReadRangesCoalesce: neighbouring ranges are read with one request
// and only their bytes (and the gaps) are fetched.
func TestReadRangesCoalesce(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f.Put("b", "t/data.parquet", data)
	o := testOptions(f.Endpoint)
	o.CoalesceGap = 4096
	st := open(t, "gs://b/t", o)
	ranges := []storage.Range{{Off: 100, Len: 1000}, {Off: 1100, Len: 500}, {Off: 3000, Len: 10}, {Off: 900000, Len: 100}, {Off: 5, Len: 0}}
	got, err := st.ReadRanges(ctxT(t), "data.parquet", ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ranges {
		if !bytes.Equal(got[i], data[r.Off:r.Off+r.Len]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
	}
	s := st.Stats()
	if s.Gets != 2 || s.RangesCoalesced != 2 || s.BytesFetched != (3010-100)+100 {
		t.Fatalf("stats %+v: want 2 reads, 2 ranges coalesced, %d bytes", s, (3010-100)+100)
	}
	if _, err := st.ReadRanges(ctxT(t), "data.parquet", []storage.Range{{Off: 1<<20 - 10, Len: 20}}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("range past the end: %v", err)
	}
}

// TestRetries: throttling (429) and server errors (503) are retried with
// backoff, within the attempt budget, and reported in one line when the
// budget is spent; the first retry is logged at info level.
func TestRetries(t *testing.T) {
	gcstest.Env(t)
	var left atomic.Int64
	f := gcstest.NewFake(t, gcstest.ErrorWhile(func() bool { return left.Add(-1) >= 0 }, 429, "rate limit exceeded"))
	f.Put("b", "t/k", []byte("0123456789"))
	var logs testkit.SyncBuffer
	o := testOptions(f.Endpoint)
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st := open(t, "gs://b/t", o)
	ctx := ctxT(t)

	left.Store(3) // three refusals, then the answer: within 4 attempts
	b, err := storage.ReadAll(ctx, st, "k")
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("%q %v", b, err)
	}
	if r := st.Stats().Retries; r != 3 {
		t.Errorf("%d retries, want 3", r)
	}
	if !strings.Contains(logs.String(), "level=INFO msg=\"gcs: a request failed; retrying\"") || !strings.Contains(logs.String(), "HTTP 429") {
		t.Errorf("no info line about the retry:\n%s", logs.String())
	}

	left.Store(100)
	start := time.Now()
	_, err = st.List(ctx, "", "")
	if err == nil || !strings.Contains(err.Error(), "gs://b/t: the server is throttling requests; gave up after 4 attempts") {
		t.Fatalf("throttled for good: %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("gave up after %v", el)
	}
}

// TestPutIfAbsent: ifGenerationMatch=0 makes the second writer lose with
// ErrExist, and the first writer's bytes stay.
func TestPutIfAbsent(t *testing.T) {
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	f.CreateBucket("b")
	st := open(t, "gs://b/t", testOptions(f.Endpoint))
	ctx := ctxT(t)
	if err := st.Put(ctx, "_delta_log/00000000000000000001.json", []byte("writer 1"), true); err != nil {
		t.Fatal(err)
	}
	err := st.Put(ctx, "_delta_log/00000000000000000001.json", []byte("writer 2"), true)
	if !errors.Is(err, storage.ErrExist) || err.Error() != "gs://b/t/_delta_log/00000000000000000001.json: object already exists (put)" {
		t.Fatalf("second conditional put: %v", err)
	}
	if b, err := storage.ReadAll(ctx, st, "_delta_log/00000000000000000001.json"); err != nil || string(b) != "writer 1" {
		t.Fatalf("%q %v", b, err)
	}
}

// TestUnreachable: a dead endpoint fails in bounded time with one line
// naming the endpoint; Close fails what is in flight at once.
func TestUnreachable(t *testing.T) {
	gcstest.Env(t)
	cloudtest.CheckGoroutines(t)
	f := gcstest.NewFake(t, nil)
	f.Stop()
	st := open(t, "gs://b/t", testOptions(f.Endpoint))
	start := time.Now()
	_, err := st.List(ctxT(t), "", "")
	want := "gs://b/t: cannot connect to the GCS endpoint " + f.Endpoint + " (connection refused); gave up after 4 attempts"
	if err == nil || err.Error() != want+" (list)" {
		t.Fatalf("%v\nwant %s (list)", err, want)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("failed after %v", el)
	}

	// A stalled server: Close ends the read at once.
	stall := cloudtest.StartProxy(t, gcstest.NewFake(t, nil).Endpoint)
	stall.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
	o := testOptions(stall.Endpoint)
	o.RequestTimeout = time.Minute
	st2, err := gcsstore.New(context.Background(), "gs://b/t", o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := st2.List(context.Background(), "", ""); done <- err }()
	time.Sleep(200 * time.Millisecond)
	st2.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "request abandoned: the store was closed") {
			t.Fatalf("after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the request in flight")
	}
	stall.RemoveToxic(t, "stall")
}
