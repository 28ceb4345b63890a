package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/aztest"
	"github.com/deltafs/deltafs/internal/gcstest"
	"github.com/deltafs/deltafs/internal/mounttest"
	"github.com/deltafs/deltafs/internal/unitytest"
)

// Tables by name on Azure and GCS: the catalog (internal/unitytest) vends
// a real SAS for Azurite, checked by Azurite and by a proxy that refuses
// any SAS the catalog did not vend or that has expired, and an OAuth token
// that a middleware around fake-gcs-server requires on every request and
// refuses once expired. No Azure or Google credentials are in the
// environment: the vended ones are the only way in.

// ucCloud is a catalog with tables on one cloud.
type ucCloud struct {
	uc    *unitytest.Server
	flags []string          // the endpoint flag of the cloud
	local map[string]string // table name -> local copy with the objects' times
}

// startUCAzure uploads tables to Azurite under abfss:// locations that
// the catalog serves as main.default.<name>.
func startUCAzure(t *testing.T, lifetime time.Duration, names []string) *ucCloud {
	t.Helper()
	srv := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, srv.Endpoint, "lake", false)
	local := uploadAzTables(t, srv.Endpoint, "lake", names)
	uc := unitytest.Start(t, lifetime, "", "")
	uc.VendAzure(aztest.Account, aztest.Key)
	for _, name := range names {
		uc.AddTable(ucName(name), "abfss://lake@"+aztest.Account+".dfs.core.windows.net/"+name)
	}
	azEnv(t, "")
	ucEnv(t, uc)
	return &ucCloud{uc: uc, flags: []string{"--azure-endpoint", uc.AzureProxy(t, srv.Endpoint)}, local: local}
}

// startUCGCS uploads tables to fake-gcs-server under gs:// locations that
// the catalog serves as main.default.<name>.
func startUCGCS(t *testing.T, lifetime time.Duration, names []string) *ucCloud {
	t.Helper()
	uc := unitytest.Start(t, lifetime, "", "")
	f := gcstest.NewFake(t, uc.WrapGCS)
	local := uploadGCSTables(t, f, "lake", names)
	for _, name := range names {
		uc.AddTable(ucName(name), "gs://lake/"+name)
	}
	gcstest.Env(t)
	ucEnv(t, uc)
	return &ucCloud{uc: uc, flags: []string{"--gcs-endpoint", f.Endpoint}, local: local}
}

var ucClouds = []struct {
	name  string
	start func(*testing.T, time.Duration, []string) *ucCloud
	stats string // the backend's key in .deltafs/stats
}{
	{"azure", startUCAzure, `"azure"`},
	{"gcs", startUCGCS, `"gcs"`},
}

// TestUCCloudTables: tables by name on Azure and on GCS equal the same
// tables by path (log --json, every version's sample files), every
// storage request carrying vended credentials.
func TestUCCloudTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	names := []string{"dat-with_checkpoint", "dat-basic_partitioned"}
	for _, cloud := range ucClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 30*time.Second, names)
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					compareRemoteTable(t, bin, "uc://"+ucName(name), c.flags, name, c.local[name])
				})
			}
			if e, r := c.uc.Expired.Load(), c.uc.Refused.Load(); e != 0 || r != 0 {
				t.Errorf("storage refused %d requests as expired, %d otherwise", e, r)
			}
			if c.uc.Accepted.Load() == 0 || c.uc.SessionsUsed() == 0 {
				t.Error("no storage request carried vended credentials")
			}
		})
	}
}

// TestUCCloudCredentialRefresh: credentials live 3 s; a mount reads every
// sample again and again for 10 s without one failed read, storage never
// sees expired credentials, several vended SAS tokens (tokens) reach it,
// each renewal is logged. At --log-level debug, neither the log, /metrics
// nor .deltafs/stats holds the catalog token or any vended secret. Then
// the grant is revoked: reads fail with EIO once the catalog refuses a
// renewal, the backend does not retry the refusal, and the mount's log
// keeps the catalog's answer.
func TestUCCloudCredentialRefresh(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	const name = "dat-with_checkpoint"
	for _, cloud := range ucClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 3*time.Second, []string{name})
			addr := freeAddr(t)
			flags := append([]string{"--data-column", "-", "--cache-dir", "none", "--mem-cache", "0", "--refresh", "1s",
				"--log-level", "debug", "--metrics-addr", addr}, c.flags...)
			m := mounttest.Start(t, bin, "uc://"+ucName(name), flags...)
			shard := filepath.Join(m.Dir, "latest", "shard", "0")
			names := samplesUnder(t, shard)
			if len(names) == 0 {
				t.Fatal("no samples")
			}
			want := map[string][]byte{}
			reads := 0
			for start := time.Now(); time.Since(start) < 10*time.Second; {
				for _, n := range names {
					b, err := readUncached(filepath.Join(shard, n))
					if err != nil {
						t.Fatalf("read %d (after %v): %s: %v", reads, time.Since(start).Round(time.Millisecond), n, err)
					}
					if w, ok := want[n]; ok && string(w) != string(b) {
						t.Fatalf("%s: other bytes on a later read", n)
					}
					want[n] = b
					reads++
				}
				time.Sleep(100 * time.Millisecond)
			}
			if e, r := c.uc.Expired.Load(), c.uc.Refused.Load(); e != 0 || r != 0 {
				t.Errorf("storage refused %d requests as expired, %d otherwise", e, r)
			}
			if n := c.uc.SessionsUsed(); n < 3 {
				t.Errorf("%d vended credentials reached storage in over three lifetimes, want 3 at least", n)
			}
			log := m.Log()
			if n := strings.Count(log, `level=INFO msg="unity catalog: renewed the vended credentials"`); n < 3 {
				t.Errorf("%d renewals logged at info level, want 3 at least:\n%s", n, log)
			}
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			metrics, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			stats, err := os.ReadFile(filepath.Join(m.Dir, ".deltafs", "stats"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(stats), cloud.stats) {
				t.Errorf(".deltafs/stats of a catalog table lacks the backend's counters (%s):\n%s", cloud.stats, stats)
			}

			// Revoked: the next renewal (2 s into a 3 s lifetime) is
			// refused and reads fail from then on, at once.
			accepted := c.uc.Accepted.Load()
			c.uc.Revoke(ucName(name))
			revoked := time.Now()
			var failed error
			for failed == nil {
				if time.Since(revoked) > 20*time.Second {
					t.Fatal("reads still work 20 s after the grant was revoked")
				}
				for _, n := range names {
					if _, err := readUncached(filepath.Join(shard, n)); err != nil {
						failed = err
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !errors.Is(failed, syscall.EIO) {
				t.Fatalf("read after the revocation: %v, want EIO", failed)
			}
			sent := c.uc.Accepted.Load()
			for _, n := range names {
				if _, err := readUncached(filepath.Join(shard, n)); !errors.Is(err, syscall.EIO) {
					t.Fatalf("%s after the refusal: %v, want EIO", n, err)
				}
			}
			if d := c.uc.Accepted.Load() - sent; d != 0 {
				t.Errorf("%d storage requests after the catalog refused", d)
			}
			if e, r := c.uc.Expired.Load(), c.uc.Refused.Load(); e != 0 || r != 0 {
				t.Errorf("after the revocation, storage refused %d requests as expired, %d otherwise: a request went out without valid credentials", e, r)
			}
			t.Logf("%d reads, %d credentials vended, %d used; %d requests before the revocation; reads failed %v after it",
				reads, c.uc.Vended.Load(), c.uc.SessionsUsed(), accepted, time.Since(revoked).Round(time.Millisecond))

			if err := m.Stop(); err != nil {
				t.Fatalf("unmount: %v", err)
			}
			log = m.Log()
			i := strings.Index(log, "refuses to renew read credentials")
			if i < 0 {
				t.Fatalf("the mount did not log the refusal:\n%s", log)
			}
			after := log[i:]
			if strings.Contains(after, "retrying") {
				t.Errorf("a request refused by the credential source was retried:\n%s", after)
			}
			if !strings.Contains(after, "Unity Catalog refuses read credentials (HTTP 403 PERMISSION_DENIED") {
				t.Errorf("no failed read says the catalog refused:\n%s", after)
			}
			for _, s := range c.uc.Secrets() {
				for what, text := range map[string]string{"log": log, "/metrics": string(metrics), ".deltafs/stats": string(stats)} {
					if strings.Contains(text, s) {
						t.Errorf("the %s holds a secret (%.8s...)", what, s)
					}
				}
			}
			if len(c.uc.Secrets()) < 4 {
				t.Errorf("only %d secrets to look for", len(c.uc.Secrets()))
			}
		})
	}
}
