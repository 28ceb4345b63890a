package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/spf13/pflag"

	"github.com/deltafs/deltafs/internal/mounttest"
	"github.com/deltafs/deltafs/internal/s3test"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
)

// Mount-level S3 faults: an MNIST-like table in gofakes3 behind an
// in-process Toxiproxy, mounted in this process by runMount (the command's
// own code), read as an epoch while the network or the server misbehaves.
// Either the epoch completes with the bytes of the same table mounted from
// local disk once the fault clears, or the samples the fault hits fail
// with EIO (never EINTR, never a hang) and a log line, while the mount
// keeps serving. Afterwards no goroutine, request or connection is left.

// inProcMount is runMount serving a mount point in this process.
type inProcMount struct {
	dir    string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// mountHere runs runMount(table, fresh dir, flags) until the tree is up;
// t.Cleanup stops it.
func mountHere(t *testing.T, table string, flags ...string) *inProcMount {
	t.Helper()
	var o mountOptions
	fl := pflag.NewFlagSet("mount", pflag.ContinueOnError)
	o.AddFlags(fl)
	if err := fl.Parse(flags); err != nil {
		t.Fatal(err)
	}
	m := &inProcMount{dir: mounttest.Mountpoint(t), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- runMount(ctx, &o, table, m.dir) }()
	t.Cleanup(func() {
		if err := m.stop(); err != nil {
			t.Errorf("unmount %s: %v", table, err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(m.dir, "latest")); err == nil {
			return m
		}
		select {
		case err := <-m.done:
			m.done <- err
			t.Fatalf("mount %s: %v", table, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mount %s did not come up in 30 s", table)
		}
	}
}

// stop unmounts (as SIGINT does) and waits for runMount to return.
func (m *inProcMount) stop() error {
	m.once.Do(func() {
		m.cancel()
		select {
		case m.err = <-m.done:
		case <-time.After(30 * time.Second):
			mounttest.Unmount(m.dir)
			m.err = errors.New("runMount did not return 30 s after the unmount request")
		}
		if mounttest.Mounted(m.dir) {
			mounttest.Unmount(m.dir)
			m.err = errors.Join(m.err, errors.New("left mounted"))
		}
	})
	return m.err
}

// s3Stats reads the store's counters from MOUNT/.deltafs/stats: requests
// sent (every attempt counts, at once) and requests in flight.
func (m *inProcMount) s3Stats(t *testing.T) (requests, inFlight int64) {
	t.Helper()
	st := m.s3Counters(t)
	return st.Gets + st.Heads + st.Lists, st.InFlight
}

// s3Counters are the store's counters the tests use.
type s3Counters struct{ Gets, Heads, Lists, InFlight, Retries int64 }

func (m *inProcMount) s3Counters(t *testing.T) s3Counters {
	t.Helper()
	b, err := readNoPoll(filepath.Join(m.dir, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		S3 *s3Counters `json:"s3"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.S3 == nil {
		t.Fatalf("stats without s3 counters (%v): %s", err, b)
	}
	return *st.S3
}

// shard is version 0's only shard.
func (m *inProcMount) shard() string { return filepath.Join(m.dir, "version", "0", "shard", "0") }

// readSamples reads files (relative to the shard) with 4 workers, as a
// data loader does, and returns what each read returned. Reads that do not
// end within a minute are a hang: errs[""] says so.
// readNoPoll reads a whole file with plain system calls. os.ReadFile
// registers the file with the Go runtime's epoll, and epoll_ctl on a FUSE
// file sends POLL to the server and waits, holding the epoll instance's
// lock: when the server is this very process (an in-process mount) and its
// request handlers wait on network reads that need that lock, nothing
// moves again. A mount in its own process (deltafs mount) cannot meet it.
func readNoPoll(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

func (m *inProcMount) readSamples(files []string) (data map[string][]byte, errs map[string]error) {
	data, errs = map[string][]byte{}, map[string]error{}
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				b, err := readNoPoll(filepath.Join(m.shard(), f))
				mu.Lock()
				if err != nil {
					errs[f] = err
				} else {
					data[f] = b
				}
				mu.Unlock()
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		for _, f := range files {
			work <- f
		}
		close(work)
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		d, e := map[string][]byte{}, map[string]error{"": fmt.Errorf("reading %d samples did not end in a minute: a read hangs", len(files))}
		return d, e
	}
	return data, errs
}

// waitRequests waits until the store sent n more requests than base (all
// of them failing, under a fault that fails every request).
func (m *inProcMount) waitRequests(t *testing.T, base, n int64) error {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, _ := m.s3Stats(t); r >= base+n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %d requests in 30 s: the fault did not hit the mount", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// switchable answers every request with 503 SlowDown while on.
type switchable struct{ on atomic.Bool }

func (s *switchable) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.on.Load() {
			s3test.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestMountS3Faults(t *testing.T) {
	mounttest.RequireFUSE(t)
	cloudtest.CheckGoroutines(t) // first: checked after every other cleanup

	// An MNIST-like table: 400 digits in 8 data files, on local disk and
	// in gofakes3 behind Toxiproxy.
	digits := testkit.MNIST(t, testkit.MNISTTest)[:400]
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	table.commit(time.Date(2026, 10, 1, 8, 30, 0, 0, time.UTC), digitSchema, chunk(digits, 50))
	throttle := &switchable{}
	fake := s3test.NewFake(t, throttle.wrap)
	proxy := cloudtest.StartProxy(t, fake.Endpoint)
	s3test.UploadDir(t, fake.Endpoint, "train", "mnist", table.dir)
	s3Env(t, fake.Endpoint)
	var logs testkit.SyncBuffer
	saved, savedLog := global.storage, slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { global.storage = saved; slog.SetDefault(savedLog) })
	s3opts := func(timeout time.Duration, attempts int) {
		global.storage.S3 = storage.S3Options{Endpoint: proxy.Endpoint, PathStyle: true, Region: s3test.Region, Timeout: timeout, MaxAttempts: attempts}
	}
	flags := []string{"--image", "28x28", "--cache-dir", "none"}
	const loc = "s3://train/mnist"

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
	// same checks that an epoch read every file with the local bytes.
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
	// epochDuring reads the epoch while a fault is on; heal ends the fault
	// once the store sent a few requests into it (and, idempotent, again
	// when the test ends).
	epochDuring := func(t *testing.T, m *inProcMount, files []string, heal func()) (map[string][]byte, map[string]error) {
		t.Helper()
		var once sync.Once
		healOnce := func() { once.Do(heal) }
		defer healOnce()
		base, _ := m.s3Stats(t)
		type result struct {
			data map[string][]byte
			errs map[string]error
		}
		res := make(chan result, 1)
		go func() { d, e := m.readSamples(files); res <- result{d, e} }()
		if err := m.waitRequests(t, base, 3); err != nil {
			healOnce()
			<-res
			t.Fatal(err)
		}
		healOnce()
		r := <-res
		if c := m.s3Counters(t); c.Retries == 0 {
			t.Errorf("no retry: the fault did not fail a request (%+v)", c)
		}
		return r.data, r.errs
	}
	// idle checks that a stopped mount left no request or connection.
	idle := func(t *testing.T, m *inProcMount) {
		t.Helper()
		// A request may still be finishing (a timed-out attempt closing
		// its body); none may stay.
		for deadline := time.Now().Add(5 * time.Second); ; {
			_, inFlight := m.s3Stats(t)
			if inFlight == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%d requests in flight 5 s after the epoch", inFlight)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := m.stop(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); fake.OpenConns() != 0; {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections to the server still open after unmount", fake.OpenConns())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	t.Run("latency", func(t *testing.T) {
		s3opts(5*time.Second, 5)
		proxy.AddToxic(t, "lat", "latency", "downstream", 1, map[string]any{"latency": 20, "jitter": 5})
		defer proxy.RemoveToxic(t, "lat")
		m := mountHere(t, loc, flags...)
		d, e := m.readSamples(files)
		same(t, d, e)
		idle(t, m)
	})
	t.Run("reset_peer", func(t *testing.T) {
		s3opts(5*time.Second, 50)
		m := mountHere(t, loc, flags...)
		proxy.AddToxic(t, "reset", "reset_peer", "downstream", 1, map[string]any{"timeout": 0})
		d, e := epochDuring(t, m, files, func() { proxy.RemoveToxic(t, "reset") })
		same(t, d, e)
		idle(t, m)
	})
	t.Run("throttled", func(t *testing.T) {
		s3opts(5*time.Second, 50)
		m := mountHere(t, loc, flags...)
		throttle.on.Store(true)
		defer throttle.on.Store(false)
		d, e := epochDuring(t, m, files, func() { throttle.on.Store(false) })
		same(t, d, e)
		idle(t, m)
	})
	t.Run("server_restart", func(t *testing.T) {
		s3opts(5*time.Second, 50)
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
		// Answers stop mid-epoch; attempts time out after 300 ms and are
		// retried until the network comes back.
		s3opts(300*time.Millisecond, 50)
		m := mountHere(t, loc, flags...)
		proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
		d, e := epochDuring(t, m, files, func() { proxy.RemoveToxic(t, "stall") })
		same(t, d, e)
		idle(t, m)
	})
	t.Run("stall_kept", func(t *testing.T) {
		// Two attempts of 300 ms each: a sample whose bytes stall fails
		// with EIO, with a log line naming it and its version.
		s3opts(300*time.Millisecond, 2)
		m := mountHere(t, loc, flags...)
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
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "I/O error") && strings.Contains(l, victim) {
				line = l
			}
		}
		if !strings.Contains(line, "version 0") || !strings.Contains(line, "timed out") {
			t.Fatalf("no log line naming %s, version 0 and the timeout:\n%s", victim, logs.String())
		}
		if strings.Contains(line, s3test.SecretKey) {
			t.Fatalf("the log holds the secret key: %s", line)
		}
		t.Logf("EIO after %v; log: %s", el.Round(time.Millisecond), line)
		// Still stalled: what needs no request keeps working.
		if ents, err := os.ReadDir(m.shard()); err != nil || len(ents) != len(files)+1 {
			t.Fatalf("listing the shard under the stall: %d entries, %v", len(ents), err)
		}
		if d, errs := m.readSamples(files[:1]); len(errs) != 0 || !bytes.Equal(d[files[0]], want[files[0]]) {
			t.Fatalf("a sample read before the stall, read again under it: %v", errs)
		}
		proxy.RemoveToxic(t, "stall")
		stalled = false
		// The mount keeps serving: the whole epoch, the victim included.
		d, e := m.readSamples(files)
		same(t, d, e)
		idle(t, m)
	})
}

func firstKey[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprint(keys[0])
}
