package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
)

// GCS conformance: every table of testdata/delta, uploaded to
// fake-gcs-server on 127.0.0.1, reads exactly like the same table on local
// disk through the real binary (STORAGE_EMULATOR_HOST, as users of the
// emulator set it): `deltafs log --json` prints the same lines, and the
// mounts have the same versions with the same sample files, byte for byte.

// uploadGCSTables uploads tables to bucket, each under its name, and
// returns a local copy of each whose files carry the update time of their
// object (log timestamps are file times, and git keeps none).
func uploadGCSTables(t *testing.T, f *gcstest.Fake, bucket string, names []string) map[string]string {
	t.Helper()
	return mirrorTables(t, names,
		func(name, src string) int { return gcstest.UploadDir(t, f, bucket, name, src) },
		func() map[string]time.Time {
			keys, err := f.Keys(bucket)
			if err != nil {
				t.Fatalf("list gs://%s: %v", bucket, err)
			}
			times := map[string]time.Time{}
			for _, k := range keys {
				if times[k], err = f.Updated(bucket, k); err != nil {
					t.Fatal(err)
				}
			}
			return times
		})
}

// TestMountGCSDeltaTables: every table of testdata/delta in fake-gcs-server.
func TestMountGCSDeltaTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	gcstest.Env(t)
	f := gcstest.NewFake(t, nil)
	t.Setenv(gcsstore.EmulatorEnv, f.Host)
	names := deltaTableNames(t)
	local := uploadGCSTables(t, f, "delta", names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { compareRemoteTable(t, bin, "gs://delta/"+name, nil, name, local[name]) })
	}
}

// TestMountGCSRefuses: wrong credentials (a key the token endpoint
// refuses, a token the server refuses), access denied, a missing bucket, a
// missing table and an endpoint that is down each fail `deltafs mount`
// before mounting, within a bounded time, with exit status 1 and one error
// line on stderr (the last; the lines before it are log lines) that names
// the table and the cause. Run at --log-level debug, no line holds a
// token or the key; nor does the debug log of a command that works
// through retries.
func TestMountGCSRefuses(t *testing.T) {
	bin := mounttest.Binary(t)
	mounttest.RequireFUSE(t)
	const good, denied = "ya29.deltafs-cli-good-token-424242", "ya29.deltafs-cli-denied-token-171717"
	var throttled atomic.Int64
	f := gcstest.NewFake(t, func(h http.Handler) http.Handler {
		return gcstest.RequireToken(good, denied)(gcstest.ErrorWhile(func() bool { return throttled.Add(-1) >= 0 }, 503, "backend error")(h))
	})
	gcstest.UploadDir(t, f, "tables", "basic", filepath.Join(testkit.Tables(), "dat-basic_append"))
	down := gcstest.NewFake(t, nil)
	down.Stop()
	key := func(ts *gcstest.TokenServer) gcstest.ServiceAccount {
		return gcstest.WriteServiceAccount(t, t.TempDir(), ts.URL)
	}
	goodKey := key(gcstest.StartTokenServer(t, good))
	deniedKey := key(gcstest.StartTokenServer(t, denied))
	unknownKey := key(gcstest.StartTokenServer(t, "ya29.deltafs-cli-unknown-token-0000"))
	refusing := gcstest.StartTokenServer(t, good)
	refusing.Refuse.Store(true)
	refusedKey := key(refusing)
	secrets := []string{good, denied, "ya29.deltafs-cli-unknown-token-0000", "PRIVATE KEY", goodKey.KeyID}
	for _, k := range []gcstest.ServiceAccount{goodKey, deniedKey, unknownKey, refusedKey} {
		secrets = append(secrets, strings.Split(k.PrivateKey, "\n")[1])
	}
	noSecret := func(t *testing.T, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Fatalf("a secret (%.12s...) is in the output:\n%s", s, out)
			}
		}
	}

	t.Run("works, with retries, at debug level", func(t *testing.T) {
		gcstest.Env(t)
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", goodKey.Path)
		throttled.Store(3)
		defer throttled.Store(0)
		out, stderr, code := runBin(t, bin, time.Minute, "log", "gs://tables/basic", "--gcs-endpoint", f.Endpoint, "--log-level", "debug")
		if code != 0 || !strings.Contains(out, "WRITE") {
			t.Fatalf("exit %d: %s%s", code, out, stderr)
		}
		if !strings.Contains(stderr, "gcs: a request failed; retrying") || !strings.Contains(stderr, "HTTP 503") {
			t.Fatalf("no retry logged:\n%s", stderr)
		}
		noSecret(t, out+stderr)
	})

	for _, tc := range []struct {
		name, endpoint, table, key string
		want                       []string // all must be in the line (lower case)
	}{
		{"key refused", f.Endpoint, "gs://tables/basic", refusedKey.Path, []string{"invalid credentials: the token endpoint refused them", "invalid_grant"}},
		{"token refused", f.Endpoint, "gs://tables/basic", unknownKey.Path, []string{"invalid credentials: the server refused the access token", "http 401"}},
		{"access denied", f.Endpoint, "gs://tables/basic", deniedKey.Path, []string{"access denied", "storage.objects.list"}},
		{"missing key file", f.Endpoint, "gs://tables/basic", "/nonexistent/key.json", []string{"no usable google credentials", "google_application_credentials"}},
		{"missing bucket", f.Endpoint, "gs://no-such-bucket/basic", goodKey.Path, []string{"bucket no-such-bucket does not exist"}},
		{"missing table", f.Endpoint, "gs://tables/nope", goodKey.Path, []string{"not a delta table"}},
		{"endpoint down", down.Endpoint, "gs://tables/basic", goodKey.Path, []string{"cannot connect to the gcs endpoint " + down.Endpoint, "connection refused", "gave up after 3 attempts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gcstest.Env(t)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", tc.key)
			dir := t.TempDir()
			start := time.Now()
			_, stderr, code := runBin(t, bin, time.Minute, "mount", tc.table, dir, "--gcs-endpoint", tc.endpoint,
				"--gcs-retries", "2", "--gcs-timeout", "5s", "--cache-dir", "none", "--log-level", "debug")
			el := time.Since(start)
			if mounttest.Mounted(dir) {
				mounttest.Unmount(dir)
				t.Fatal("left mounted")
			}
			msg := requireErrorLine(t, stderr, code, tc.table, -1, tc.want)
			noSecret(t, stderr)
			if el > 30*time.Second {
				t.Errorf("failed after %v", el)
			}
			t.Logf("%v: %s", el.Round(time.Millisecond), msg)
		})
	}
}
