package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/deltafs/deltafs/internal/gcstest"
	"github.com/deltafs/deltafs/internal/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
)

// Mount-level GCS faults, as TestMountS3Faults: an MNIST-like table in
// fake-gcs-server behind an in-process Toxiproxy, mounted in this process,
// read as an epoch while the network or the server misbehaves (latency,
// resets, throttling, a server restart). The epoch completes with the
// bytes of the same table on local disk; afterwards no goroutine, request
// or connection is left.

// gcsCounters are the store's counters from MOUNT/.deltafs/stats.
type gcsCounters struct{ Gets, Heads, Lists, InFlight, Retries int64 }

func (m *inProcMount) gcsCounters(t *testing.T) gcsCounters {
	t.Helper()
	b, err := readNoPoll(filepath.Join(m.dir, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		GCS *gcsCounters `json:"gcs"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.GCS == nil {
		t.Fatalf("stats without gcs counters (%v): %s", err, b)
	}
	return *st.GCS
}

func TestMountGCSFaults(t *testing.T) {
	mounttest.RequireFUSE(t)
	cloudtest.CheckGoroutines(t) // first: checked after every other cleanup
	gcstest.Env(t)

	digits := testkit.MNIST(t, testkit.MNISTTest)[:400]
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	table.commit(time.Date(2026, 10, 1, 8, 30, 0, 0, time.UTC), digitSchema, chunk(digits, 50))
	var throttle atomic.Bool
	fake := gcstest.NewFake(t, gcstest.ErrorWhile(throttle.Load, 429, "The rate of change requests to the object exceeds the rate limit."))
	proxy := cloudtest.StartProxy(t, fake.Endpoint)
	gcstest.UploadDir(t, fake, "train", "mnist", table.dir)
	var logs testkit.SyncBuffer
	saved, savedLog := global.storage, slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { global.storage = saved; slog.SetDefault(savedLog) })
	global.storage.GCS = storage.GCSOptions{Endpoint: proxy.Endpoint, Anonymous: true, Timeout: 5 * time.Second, MaxAttempts: 50}
	flags := []string{"--image", "28x28", "--cache-dir", "none"}
	const loc = "gs://train/mnist"

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
	same := func(t *testing.T, got map[string][]byte, errs map[string]error) {
		t.Helper()
		if len(errs) != 0 {
			t.Fatalf("%d of %d samples failed, e.g. %v", len(errs), len(files), errs[firstKey(errs)])
		}
		for _, f := range files {
			if !bytes.Equal(got[f], want[f]) {
				t.Fatalf("%s: %d bytes differ from the local table's %d", f, len(got[f]), len(want[f]))
			}
		}
	}
	requests := func(t *testing.T, m *inProcMount) int64 {
		c := m.gcsCounters(t)
		return c.Gets + c.Heads + c.Lists
	}
	// epochDuring reads files while a fault is on, and heals it once the
	// store sent 3 requests into it.
	epochDuring := func(t *testing.T, m *inProcMount, files []string, heal func()) (map[string][]byte, map[string]error) {
		t.Helper()
		var once sync.Once
		healOnce := func() { once.Do(heal) }
		defer healOnce()
		base := requests(t, m)
		type result struct {
			data map[string][]byte
			errs map[string]error
		}
		res := make(chan result, 1)
		go func() { d, e := m.readSamples(files); res <- result{d, e} }()
		for deadline := time.Now().Add(30 * time.Second); requests(t, m) < base+3; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				healOnce()
				<-res
				t.Fatal("no 3 requests in 30 s: the fault did not hit the mount")
			}
		}
		healOnce()
		r := <-res
		if c := m.gcsCounters(t); c.Retries == 0 {
			t.Errorf("no retry: the fault did not fail a request (%+v)", c)
		}
		return r.data, r.errs
	}
	idle := func(t *testing.T, m *inProcMount) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); m.gcsCounters(t).InFlight != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d requests in flight 5 s after the epoch", m.gcsCounters(t).InFlight)
				break
			}
		}
		if err := m.stop(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); fake.OpenConns() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections to the server still open after unmount", fake.OpenConns())
			}
		}
	}

	t.Run("latency", func(t *testing.T) {
		proxy.AddToxic(t, "lat", "latency", "downstream", 1, map[string]any{"latency": 20, "jitter": 5})
		defer proxy.RemoveToxic(t, "lat")
		m := mountHere(t, loc, flags...)
		d, e := m.readSamples(files)
		same(t, d, e)
		idle(t, m)
	})
	t.Run("reset_peer", func(t *testing.T) {
		m := mountHere(t, loc, flags...)
		proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
		d, e := epochDuring(t, m, files, func() { proxy.RemoveToxic(t, "reset") })
		same(t, d, e)
		idle(t, m)
	})
	t.Run("throttled", func(t *testing.T) {
		m := mountHere(t, loc, flags...)
		throttle.Store(true)
		defer throttle.Store(false)
		d, e := epochDuring(t, m, files, func() { throttle.Store(false) })
		same(t, d, e)
		idle(t, m)
	})
	t.Run("server_restart", func(t *testing.T) {
		m := mountHere(t, loc, flags...)
		first, errs := m.readSamples(files[:len(files)/4])
		if len(errs) != 0 {
			t.Fatalf("before the restart: %v", errs)
		}
		fake.Stop()
		defer fake.Start(t)
		rest, errs := epochDuring(t, m, files[len(files)/4:], func() { fake.Start(t) })
		for f, b := range first {
			rest[f] = b
		}
		same(t, rest, errs)
		idle(t, m)
	})
	t.Run("stall_healed", func(t *testing.T) {
		global.storage.GCS.Timeout = 300 * time.Millisecond
		defer func() { global.storage.GCS.Timeout = 5 * time.Second }()
		m := mountHere(t, loc, flags...)
		proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
		d, e := epochDuring(t, m, files, func() { proxy.RemoveToxic(t, "stall") })
		same(t, d, e)
		idle(t, m)
	})
}
