package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// readUncached reads a file and then drops its pages from the kernel page
// cache, so that the next read of it reaches the mount (and, with no
// memory or disk cache, S3).
func readUncached(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return b, err
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestUCCredentialRefresh, on each cloud: credentials live 3 s; a mount
// reads every sample again and again for 12 s (four lifetimes) without
// one failed read, storage never sees expired credentials, several vended
// credentials reach it, each renewal is logged at info level. At
// --log-level debug, neither the log, /metrics nor .deltafs/stats holds
// the catalog token or any vended secret. Then the grant is revoked:
// reads fail with EIO (each within a bound, never a hang) once the
// catalog refuses a renewal (the next one: two thirds of the lifetime),
// and from then on every read does; the backend does not retry the
// refusal, no request goes out, and the mount says why in one warning
// that keeps the catalog's answer.
func TestUCCredentialRefresh(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	const name = "dat-with_checkpoint"
	for _, cloud := range ucClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 3*time.Second, []string{name})
			addr := freeAddr(t)
			// JSON samples, no memory or disk cache (every read reaches
			// storage), a poll of the log every second (storage lists all
			// along).
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
			for start := time.Now(); time.Since(start) < 12*time.Second; {
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
			if n := c.uc.SessionsUsed(); n < cloud.minSessions {
				t.Errorf("%d vended credentials reached storage in four lifetimes, want %d at least", n, cloud.minSessions)
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

			// Revoked.
			accepted := c.uc.Accepted.Load()
			c.uc.Revoke(ucName(name))
			revoked := time.Now()
			var failed error
			for failed == nil {
				if time.Since(revoked) > 20*time.Second {
					t.Fatal("reads still work 20 s after the grant was revoked")
				}
				for _, n := range names {
					start := time.Now()
					_, err := readUncached(filepath.Join(shard, n))
					if d := time.Since(start); d > 10*time.Second {
						t.Fatalf("a read took %v", d)
					}
					if err != nil {
						failed = err
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			failedAt := time.Since(revoked)
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
				reads, c.uc.Vended.Load(), c.uc.SessionsUsed(), accepted, failedAt.Round(time.Millisecond))

			if err := m.Stop(); err != nil {
				t.Fatalf("unmount: %v", err)
			}
			log = m.Log()
			if n := strings.Count(log, "refuses to renew read credentials"); n != 1 {
				t.Errorf("%d lines about the refusal, want 1:\n%s", n, log)
			}
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
			if n := len(c.uc.Secrets()); n < cloud.minSecrets {
				t.Errorf("only %d secrets to look for, want %d at least", n, cloud.minSecrets)
			}
		})
	}
}
