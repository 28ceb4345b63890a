package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// Mount-level faults, on S3 (gofakes3), GCS (fake-gcs-server) and Azure
// (Azurite): an MNIST-like table in the cloud's emulator behind an
// in-process Toxiproxy, mounted in this process by runMount (the command's
// own code), read as an epoch while the network or the server misbehaves
// (latency, connections reset, throttling, the server restarted
// mid-epoch, answers that stop). Either the epoch completes with the
// bytes of the same table mounted from local disk once the fault clears,
// or the samples the fault hits fail with EIO (never EINTR, never a hang)
// and a log line, while the mount keeps serving. Afterwards no goroutine,
// request or connection is left.

// faultCloud describes a cloud for the suite.
type faultCloud struct {
	name   string
	stats  string // the store's key in MOUNT/.deltafs/stats
	loc    string // the table's location
	secret string // a secret no log line may hold ("": none)
	// throttle is the cloud's answer to a request over its rate.
	throttle http.HandlerFunc
	// start starts the emulator, its handler wrapped by wrap, holding the
	// table at dir under loc, on addr (127.0.0.1:port); t.Cleanup stops it.
	start func(t *testing.T, wrap func(http.Handler) http.Handler, dir string) (srv faultServer, addr string)
	// options points global.storage and the environment at endpoint (a
	// proxy in front of the server) with a time limit per attempt and
	// attempts per request.
	options func(t *testing.T, endpoint string, timeout time.Duration, attempts int)
}

// faultServer is an emulator that a test stops and starts again, on the
// same address with the same objects (s3test.Fake, gcstest.Fake,
// aztest.Fake).
type faultServer interface {
	Stop()
	Start(testing.TB)
	OpenConns() int64
}

var faultClouds = []faultCloud{
	{
		name: "s3", stats: "s3", loc: "s3://train/mnist", secret: s3test.SecretKey,
		throttle: func(w http.ResponseWriter, r *http.Request) {
			s3test.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		},
		start: func(t *testing.T, wrap func(http.Handler) http.Handler, dir string) (faultServer, string) {
			fake := s3test.NewFake(t, wrap)
			s3test.UploadDir(t, fake.Endpoint, "train", "mnist", dir)
			return fake, fake.Addr
		},
		options: func(t *testing.T, endpoint string, timeout time.Duration, attempts int) {
			s3Env(t, endpoint)
			global.storage.S3 = storage.S3Options{Endpoint: endpoint, PathStyle: true, Region: s3test.Region, RemoteOptions: storage.RemoteOptions{Timeout: timeout, MaxAttempts: attempts}}
		},
	},
	{
		name: "gcs", stats: "gcs", loc: "gs://train/mnist",
		throttle: func(w http.ResponseWriter, _ *http.Request) {
			gcstest.WriteError(w, http.StatusTooManyRequests, "The rate of change requests to the object exceeds the rate limit.")
		},
		start: func(t *testing.T, wrap func(http.Handler) http.Handler, dir string) (faultServer, string) {
			fake := gcstest.NewFake(t, wrap)
			gcstest.UploadDir(t, fake, "train", "mnist", dir)
			return fake, fake.Addr
		},
		options: func(t *testing.T, endpoint string, timeout time.Duration, attempts int) {
			gcstest.Env(t)
			global.storage.GCS = storage.GCSOptions{Endpoint: endpoint, Anonymous: true, RemoteOptions: storage.RemoteOptions{Timeout: timeout, MaxAttempts: attempts}}
		},
	},
	{
		name: "azure", stats: "azure", loc: "az://train/mnist", secret: aztest.Key,
		throttle: func(w http.ResponseWriter, r *http.Request) {
			aztest.WriteError(w, r, http.StatusServiceUnavailable, "ServerBusy", "The server is currently unable to receive requests. Please retry your request.")
		},
		start: func(t *testing.T, wrap func(http.Handler) http.Handler, dir string) (faultServer, string) {
			fake := aztest.NewFake(t, wrap)
			aztest.CreateContainer(t, fake.Server.Endpoint, "train", false)
			aztest.UploadDir(t, fake.Server.Endpoint, "train", "mnist", dir)
			return fake, fake.Addr
		},
		options: func(t *testing.T, endpoint string, timeout time.Duration, attempts int) {
			azEnv(t, endpoint+"/"+aztest.Account)
			global.storage.Azure = storage.AzureOptions{RemoteOptions: storage.RemoteOptions{Timeout: timeout, MaxAttempts: attempts}}
		},
	},
}

// storeCounters are the store's counters the suite reads from
// MOUNT/.deltafs/stats (every attempt counts, at once).
type storeCounters struct{ Gets, Heads, Lists, InFlight, Retries int64 }

func (c storeCounters) requests() int64 { return c.Gets + c.Heads + c.Lists }

// counters reads the counters of the store under key ("s3", "gcs",
// "azure").
func (m *inProcMount) counters(t *testing.T, key string) storeCounters {
	t.Helper()
	b, err := readNoPoll(filepath.Join(m.dir, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]json.RawMessage
	var c storeCounters
	if err := json.Unmarshal(b, &st); err != nil || st[key] == nil {
		t.Fatalf("stats without %s counters (%v): %s", key, err, b)
	}
	if err := json.Unmarshal(st[key], &c); err != nil {
		t.Fatalf("%s counters: %v: %s", key, err, st[key])
	}
	return c
}

func TestMountFaults(t *testing.T) {
	mounttest.RequireFUSE(t)
	// An MNIST-like table: 400 digits in 8 data files, on local disk and
	// in each cloud's emulator.
	digits := testkit.MNIST(t, testkit.MNISTTest)[:400]
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	table.commit(time.Date(2026, 10, 1, 8, 30, 0, 0, time.UTC), digitSchema, chunk(digits, 50))
	var logs testkit.SyncBuffer
	saved, savedLog := global.storage, slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { global.storage = saved; slog.SetDefault(savedLog) })
	flags := []string{"--image", "28x28", "--cache-dir", "none"}

	// The reference: the local table, mounted the same way.
	ref := mountHere(t, table.dir, flags...)
	files := samplesUnder(t, ref.shard())
	sort.Strings(files)
	if len(files) != len(digits) {
		t.Fatalf("%d sample files, want %d", len(files), len(digits))
	}
	want, errs := ref.readSamples(files)
	if len(errs) != 0 {
		t.Fatalf("local epoch: %v", errs)
	}
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range faultClouds {
		t.Run(c.name, func(t *testing.T) {
			testMountFaults(t, c, &faultEpoch{dir: table.dir, flags: flags, files: files, want: want, logs: &logs})
		})
	}
}

// faultEpoch is what the suite reads and compares with.
type faultEpoch struct {
	dir   string // the local table
	flags []string
	files []string          // the sample files of the shard, sorted
	want  map[string][]byte // their bytes, mounted from local disk
	logs  *testkit.SyncBuffer
}

// same checks that an epoch read every file with the local bytes.
func (ep *faultEpoch) same(t *testing.T, got map[string][]byte, errs map[string]error) {
	t.Helper()
	if len(errs) != 0 {
		t.Fatalf("%d of %d samples failed, e.g. %v", len(errs), len(ep.files), errs[firstKey(errs)])
	}
	for _, f := range ep.files {
		if !bytes.Equal(got[f], ep.want[f]) {
			t.Fatalf("%s: %d bytes differ from the local table's %d", f, len(got[f]), len(ep.want[f]))
		}
	}
}

func testMountFaults(t *testing.T, c faultCloud, ep *faultEpoch) {
	cloudtest.CheckGoroutines(t) // first: checked after every other cleanup
	throttle := &cloudtest.ErrorSwitch{Answer: c.throttle}
	srv, addr := c.start(t, throttle.Wrap, ep.dir)
	proxy := cloudtest.StartProxy(t, "http://"+addr)
	files := ep.files
	mount := func(t *testing.T, timeout time.Duration, attempts int) *inProcMount {
		t.Helper()
		c.options(t, proxy.Endpoint, timeout, attempts)
		return mountHere(t, c.loc, ep.flags...)
	}
	// epochDuring reads files while a fault is on; heal ends the fault
	// once the store sent 3 requests into it and retried one (and,
	// idempotent, again when the test ends). The retry is awaited, not
	// assumed: Go's HTTP client resends a request whose pooled
	// connection was reset on a new connection by itself, and that one
	// may already meet the healed network.
	epochDuring := func(t *testing.T, m *inProcMount, files []string, heal func()) (map[string][]byte, map[string]error) {
		t.Helper()
		var once sync.Once
		healOnce := func() { once.Do(heal) }
		defer healOnce()
		base := m.counters(t, c.stats).requests()
		logged := len(ep.logs.String())
		retried := func() bool {
			return len(testkit.LogLines(ep.logs.String()[logged:], "INFO", ": a request failed; retrying")) > 0
		}
		type result struct {
			data map[string][]byte
			errs map[string]error
		}
		res := make(chan result, 1)
		go func() { d, e := m.readSamples(files); res <- result{d, e} }()
		for deadline := time.Now().Add(30 * time.Second); m.counters(t, c.stats).requests() < base+3 || !retried(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				healOnce()
				<-res
				t.Fatal("no 3 requests and a retry in 30 s: the fault did not hit the mount")
			}
		}
		healOnce()
		r := <-res
		if n := m.counters(t, c.stats); n.Retries == 0 {
			t.Errorf("no retry: the fault did not fail a request (%+v)", n)
		}
		return r.data, r.errs
	}
	// idle checks that a stopped mount left no request or connection.
	idle := func(t *testing.T, m *inProcMount) {
		t.Helper()
		// A request may still be finishing (a timed-out attempt closing
		// its body); none may stay.
		for deadline := time.Now().Add(5 * time.Second); m.counters(t, c.stats).InFlight != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d requests in flight 5 s after the epoch", m.counters(t, c.stats).InFlight)
				break
			}
		}
		if err := m.stop(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); srv.OpenConns() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections to the server still open after unmount", srv.OpenConns())
			}
		}
	}

	t.Run("latency", func(t *testing.T) {
		proxy.AddToxic(t, "lat", "latency", "downstream", 1, map[string]any{"latency": 20, "jitter": 5})
		defer proxy.RemoveToxic(t, "lat")
		m := mount(t, 5*time.Second, 5)
		d, e := m.readSamples(files)
		ep.same(t, d, e)
		idle(t, m)
	})
	// Faults on for the first requests of an epoch, healed after three:
	// connections reset; throttling; answers that stop (attempts time out
	// after 300 ms and are retried until the network comes back).
	for _, f := range []struct {
		name    string
		timeout time.Duration
		on, off func(*testing.T)
	}{
		{"reset_peer", 5 * time.Second,
			func(t *testing.T) {
				proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
			},
			func(t *testing.T) { proxy.RemoveToxic(t, "reset") }},
		{"throttled", 5 * time.Second, func(*testing.T) { throttle.Set(-1) }, func(*testing.T) { throttle.Set(0) }},
		{"stall_healed", 300 * time.Millisecond,
			func(t *testing.T) {
				proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
			},
			func(t *testing.T) { proxy.RemoveToxic(t, "stall") }},
	} {
		t.Run(f.name, func(t *testing.T) {
			m := mount(t, f.timeout, 50)
			f.on(t)
			d, e := epochDuring(t, m, files, func() { f.off(t) })
			ep.same(t, d, e)
			idle(t, m)
		})
	}
	t.Run("server_restart", func(t *testing.T) {
		m := mount(t, 5*time.Second, 50)
		first, errs := m.readSamples(files[:len(files)/4])
		if len(errs) != 0 {
			t.Fatalf("before the restart: %v", errs)
		}
		srv.Stop()
		defer srv.Start(t)
		rest, errs := epochDuring(t, m, files[len(files)/4:], func() { srv.Start(t) })
		for f, b := range first {
			rest[f] = b
		}
		ep.same(t, rest, errs)
		idle(t, m)
	})
	t.Run("stall_kept", func(t *testing.T) {
		// Two attempts of 300 ms each: a sample whose bytes stall fails
		// with EIO (not EINTR), with a log line naming it and its version.
		m := mount(t, 300*time.Millisecond, 2)
		if _, errs := m.readSamples(files[:1]); len(errs) != 0 {
			t.Fatalf("before the stall: %v", errs)
		}
		proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
		stalled := true
		defer func() {
			if stalled {
				proxy.RemoveToxic(t, "stall")
			}
		}()
		victim := files[len(files)-1] // in the last data file, not read yet
		logged := len(ep.logs.String())
		start := time.Now()
		_, errs := m.readSamples([]string{victim})
		el := time.Since(start)
		err := errs[victim]
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("reading %s under a kept stall: %v after %v, want EIO", victim, err, el)
		}
		if el > 20*time.Second {
			t.Errorf("EIO after %v", el)
		}
		line := ""
		log := ep.logs.String()[logged:]
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "I/O error") && strings.Contains(l, victim) {
				line = l
			}
		}
		if !strings.Contains(line, "version 0") || !strings.Contains(line, "timed out") {
			t.Fatalf("no log line naming %s, version 0 and the timeout:\n%s", victim, log)
		}
		if c.secret != "" && strings.Contains(line, c.secret) {
			t.Fatalf("the log holds the secret key: %s", line)
		}
		// One line naming the table once: "TABLE version 0: data file ...".
		_, cause, _ := strings.Cut(line, `err="`)
		if table, _, ok := strings.Cut(cause, " version 0: "); !ok || table == "" || strings.Count(cause, table) != 1 {
			t.Fatalf("the error does not name the table once, first: %s", line)
		}
		t.Logf("EIO after %v; log: %s", el.Round(time.Millisecond), line)
		// Still stalled: what needs no request keeps working.
		if ents, err := os.ReadDir(m.shard()); err != nil || len(ents) != len(files)+1 {
			t.Fatalf("listing the shard under the stall: %d entries, %v", len(ents), err)
		}
		if d, errs := m.readSamples(files[:1]); len(errs) != 0 || !bytes.Equal(d[files[0]], ep.want[files[0]]) {
			t.Fatalf("a sample read before the stall, read again under it: %v", errs)
		}
		proxy.RemoveToxic(t, "stall")
		stalled = false
		// The mount keeps serving: the whole epoch, the victim included.
		d, e := m.readSamples(files)
		ep.same(t, d, e)
		idle(t, m)
	})
}
