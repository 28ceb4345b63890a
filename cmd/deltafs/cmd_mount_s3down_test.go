package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// An endpoint (S3, Azure, GCS) that is gone (connection refused) or
// silent (accepts connections, never answers), met by the real binary: a
// mount's uncached samples fail with EIO (never ECONNREFUSED or another
// network errno), each with a log line; once the endpoint is declared down
// they fail at once; when it is back they read the true bytes again without a remount;
// an unmount with reads stuck on it is prompt; and log, cat and mount say
// within seconds what they are waiting for and fail with one line in a
// bounded time.

// downTable is an MNIST-like table of 400 digits in 8 data files, on local
// disk and in gofakes3 (bucket train, prefix mnist).
type downTable struct {
	local string
	fake  *s3test.Fake
}

const downLoc = "s3://train/mnist"

func newDownTable(t *testing.T) *downTable {
	t.Helper()
	digits := testkit.MNIST(t, testkit.MNISTTest)[:400]
	table := newDeltaTable(t, filepath.Join(t.TempDir(), "mnist"))
	table.commit(time.Date(2026, 10, 1, 8, 30, 0, 0, time.UTC), digitSchema, chunk(digits, 50))
	fake := s3test.NewFake(t, nil)
	s3test.UploadDir(t, fake.Endpoint, "train", "mnist", table.dir)
	s3Env(t, fake.Endpoint)
	return &downTable{local: table.dir, fake: fake}
}

// shardSamples are the sample files of version 0's only shard in row
// order (data file k holds rows 50k to 50k+49).
func shardSamples(t *testing.T, mnt string) []string {
	t.Helper()
	tsv, err := os.ReadFile(filepath.Join(mnt, "version", "0", "shard", "0", "_samples.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(tsv)), "\n") {
		if f := strings.Split(l, "\t"); len(f) > 1 && f[0] != "path" {
			out = append(out, f[0])
		}
	}
	if len(out) != 400 {
		t.Fatalf("%d samples in _samples.tsv, want 400", len(out))
	}
	return out
}

// readAll reads every sample of the shard (sequentially) into a map.
func readAll(t *testing.T, mnt string, samples []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, s := range samples {
		b, err := os.ReadFile(filepath.Join(mnt, "version", "0", "shard", "0", s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out[s] = b
	}
	return out
}

// readBounded reads one sample with a time limit (a hung read fails the
// test instead of hanging it).
func readBounded(t *testing.T, path string, limit time.Duration) ([]byte, error, time.Duration) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	start := time.Now()
	go func() { b, err := os.ReadFile(path); ch <- res{b, err} }()
	select {
	case r := <-ch:
		return r.b, r.err, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("reading %s did not end in %v", path, limit)
		return nil, nil, 0
	}
}

// waitLog waits up to d for a log line at level holding subs.
func waitLog(t *testing.T, m *mounttest.Mount, d time.Duration, level string, subs ...string) {
	t.Helper()
	for deadline := time.Now().Add(d); len(testkit.LogLines(m.Log(), level, subs...)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no %s line with %q in %v:\n%s", level, subs, d, m.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// downCloud is the table of a downTable on one cloud's test server
// (gofakes3, Azurite, fake-gcs-server), reached by the mount only through
// a Toxiproxy: stopping the proxy is a dead endpoint (connection
// refused), its timeout toxic a silent one (accepts, never answers).
type downCloud struct {
	name    string // the backend's name in log lines: s3, azure, gcs
	loc     string // the table's location
	proxy   *cloudtest.Proxy
	flags   []string // reach the proxy (credentials are in the environment)
	timeout string   // the flag bounding one attempt
	secret  string   // in no log line ("": none)
}

// downClouds uploads the table to each cloud's server, with a proxy in
// front, and sets the environment of the mounts (credentials).
func downClouds(t *testing.T, tab *downTable) []downCloud {
	t.Helper()
	s3p := cloudtest.StartProxy(t, tab.fake.Endpoint)

	az := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, az.Endpoint, "train", false)
	aztest.UploadDir(t, az.Endpoint, "train", "mnist", tab.local)
	azp := cloudtest.StartProxy(t, strings.TrimSuffix(az.Endpoint, "/"+aztest.Account))
	azEnv(t, azp.Endpoint+"/"+aztest.Account)

	gcstest.Env(t)
	gf := gcstest.NewFake(t, nil)
	gcstest.UploadDir(t, gf, "train", "mnist", tab.local)
	gp := cloudtest.StartProxy(t, gf.Endpoint)

	return []downCloud{
		{"s3", downLoc, s3p, s3Flags(s3p.Endpoint), "--s3-timeout", s3test.SecretKey},
		{"azure", "az://train/mnist", azp, nil, "--azure-timeout", aztest.Key},
		{"gcs", "gs://train/mnist", gp, []string{"--gcs-endpoint", gp.Endpoint, "--gcs-anonymous"}, "--gcs-timeout", ""},
	}
}

// TestMountEndpointDown: dead (the proxy stopped: connection refused) and
// silent (Toxiproxy's timeout toxic: nothing comes back) endpoints of S3,
// Azure and GCS under a mount of the real binary.
func TestMountEndpointDown(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	tab := newDownTable(t)
	flags := []string{"--image", "28x28", "--cache-dir", "none"}

	ref := mounttest.Start(t, bin, tab.local, flags...)
	samples := shardSamples(t, ref.Dir)
	want := readAll(t, ref.Dir, samples)
	if err := ref.Stop(); err != nil {
		t.Fatal(err)
	}

	for _, cl := range downClouds(t, tab) {
		for _, tc := range []struct {
			name  string
			args  []string
			cause string
			down  func(t *testing.T)
			up    func(t *testing.T)
		}{
			{"dead", []string{"--down-after", "2s"}, "connection refused",
				func(t *testing.T) { cl.proxy.Stop() }, func(t *testing.T) { cl.proxy.Start(t) }},
			{"silent", []string{cl.timeout, "1s", "--down-after", "2s"}, "no answer within 1s",
				func(t *testing.T) {
					cl.proxy.AddToxic(t, "silent", "timeout", "downstream", 1, map[string]any{"timeout": 0})
				},
				func(t *testing.T) { cl.proxy.RemoveToxic(t, "silent") }},
		} {
			t.Run(cl.name+"/"+tc.name, func(t *testing.T) {
				testMountDown(t, bin, cl, append(append(append([]string{}, flags...), tc.args...), cl.flags...),
					tc.cause, tc.down, tc.up, samples, want)
			})
		}
	}
}

// testMountDown mounts cl's table, takes its endpoint down, checks that
// uncached samples fail with EIO (at once once the endpoint is declared
// down), with one log line each and one warning, then brings it back and
// checks that every sample reads its true bytes again, without a remount.
func testMountDown(t *testing.T, bin string, cl downCloud, args []string, cause string, down, up func(t *testing.T), samples []string, want map[string][]byte) {
	m := mounttest.Start(t, bin, cl.loc, args...)
	sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
	if b, err := os.ReadFile(filepath.Join(sd, samples[0])); err != nil || !bytes.Equal(b, want[samples[0]]) {
		t.Fatalf("before the fault: %v\n%s", err, m.Log())
	}
	down(t)
	isUp := false
	defer func() {
		if !isUp {
			up(t)
		}
	}()

	// Samples of data files 1..7 were never read: each needs the
	// endpoint.
	uncached := samples[50:]
	check := func(s string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EIO) {
			var errno syscall.Errno
			errors.As(err, &errno)
			t.Fatalf("%s with the endpoint down: %v (errno %d), want EIO", s, err, errno)
		}
	}
	_, err, el := readBounded(t, filepath.Join(sd, uncached[0]), time.Minute)
	check(uncached[0], err)
	t.Logf("first uncached read: EIO after %v", el.Round(time.Millisecond))
	warn := cl.name + ": the endpoint is unreachable"
	waitLog(t, m, 30*time.Second, "WARN", warn, "endpoint="+cl.proxy.Endpoint)

	// Down: 100 uncached reads fail at once (each would otherwise pay its
	// retries: seconds).
	start := time.Now()
	for i := range 100 {
		s := uncached[1+i*3]
		_, err, el := readBounded(t, filepath.Join(sd, s), time.Minute)
		check(s, err)
		if el > 5*time.Second {
			t.Errorf("%s: EIO after %v while the endpoint is down: it does not fail fast", s, el)
		}
	}
	el = time.Since(start)
	if el > 30*time.Second {
		t.Errorf("100 reads while the endpoint is down took %v: they do not fail fast", el)
	}
	t.Logf("100 reads while down: EIO in %v", el.Round(time.Millisecond))
	// The server logs a failed read right after answering it: the last
	// line may come a moment after the EIO.
	checked := []string{uncached[0], uncached[1], uncached[298]}
	for _, s := range checked {
		waitLog(t, m, 10*time.Second, "ERROR", `msg="I/O error"`, s)
	}
	log := m.Log()
	for _, s := range checked {
		lines := testkit.LogLines(log, "ERROR", `msg="I/O error"`, s)
		if len(lines) == 0 || !strings.Contains(lines[0], "version 0") || !strings.Contains(lines[0], "part-0000") || !strings.Contains(lines[0], cl.loc) {
			t.Fatalf("no log line naming %s, version 0, its data file and the table:\n%s", s, log)
		}
		if n := strings.Count(lines[0], cl.loc); n != 1 {
			t.Errorf("the log line of %s names the table %d times: %s", s, n, lines[0])
		}
		if s == checked[0] {
			t.Logf("log line: %s", lines[0])
		}
		if !strings.Contains(lines[len(lines)-1], "unreachable since") || !strings.Contains(lines[len(lines)-1], cause) {
			t.Errorf("the log line of %s does not say the endpoint is unreachable and why: %s", s, lines[len(lines)-1])
		}
	}
	if n := len(testkit.LogLines(log, "WARN", warn)); n != 1 {
		t.Errorf("%d warnings that the endpoint is down, want 1", n)
	}
	if n := len(testkit.LogLines(log, "INFO", cl.name+":", "op=")); n == 0 || n > 2 {
		t.Errorf("%d info lines about retries and waits, want 1 or 2 (one of each at most per minute):\n%s", n, log)
	}
	if cl.secret != "" && strings.Contains(log, cl.secret) {
		t.Fatal("the log holds the secret key")
	}

	// Back: reads succeed again, with the true bytes, no remount.
	up(t)
	isUp = true
	start = time.Now()
	last := uncached[len(uncached)-1]
	for {
		b, err, _ := readBounded(t, filepath.Join(sd, last), time.Minute)
		if err == nil {
			if !bytes.Equal(b, want[last]) {
				t.Fatal("wrong bytes after the endpoint came back")
			}
			break
		}
		check(last, err)
		if time.Since(start) > 30*time.Second {
			t.Fatalf("reads still fail 30 s after the endpoint came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("reads succeed %v after the endpoint came back", time.Since(start).Round(time.Millisecond))
	waitLog(t, m, 5*time.Second, "INFO", cl.name+": the endpoint answers again")
	got := readAll(t, m.Dir, samples)
	for _, s := range samples {
		if !bytes.Equal(got[s], want[s]) {
			t.Fatalf("%s: wrong bytes after the endpoint came back", s)
		}
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("unmount: %v\n%s", err, m.Log())
	}
}

// TestMountS3UnmountStuck: SIGINT while a read waits on a dead endpoint
// (between retries) or a stalled one (30 s attempts, the default): the
// read fails with EIO and the server exits within seconds, not after the
// read's retries.
func TestMountS3UnmountStuck(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	tab := newDownTable(t)
	proxy := cloudtest.StartProxy(t, tab.fake.Endpoint)
	for _, tc := range []struct {
		name     string
		endpoint string
		down     func(t *testing.T)
		up       func(t *testing.T)
	}{
		{"dead", tab.fake.Endpoint, func(t *testing.T) { tab.fake.Stop() }, func(t *testing.T) { tab.fake.Start(t) }},
		{"stalled", proxy.Endpoint,
			func(t *testing.T) {
				proxy.AddToxic(t, "stall", "timeout", "downstream", 1, map[string]any{"timeout": 0})
			},
			func(t *testing.T) { proxy.RemoveToxic(t, "stall") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mounttest.Start(t, bin, downLoc, append([]string{"--image", "28x28", "--cache-dir", "none"}, s3Flags(tc.endpoint)...)...)
			samples := shardSamples(t, m.Dir)
			sd := filepath.Join(m.Dir, "version", "0", "shard", "0")
			if _, err := os.ReadFile(filepath.Join(sd, samples[0])); err != nil {
				t.Fatal(err)
			}
			tc.down(t)
			defer tc.up(t)
			type res struct {
				err error
				at  time.Time
			}
			reads := make(chan res, 3)
			for _, s := range []string{samples[100], samples[200], samples[399]} {
				go func() {
					_, err := os.ReadFile(filepath.Join(sd, s))
					reads <- res{err, time.Now()}
				}()
			}
			// The reads are stuck on the endpoint (in an attempt or a
			// backoff) for a while before the unmount.
			time.Sleep(2 * time.Second)
			select {
			case r := <-reads:
				t.Fatalf("a read ended before the unmount: %v", r.err)
			default:
			}
			start := time.Now()
			if err := m.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			exited, err := m.Wait(20 * time.Second)
			el := time.Since(start)
			if !exited {
				t.Fatalf("the server still runs 20 s after SIGINT:\n%s", m.Log())
			}
			if err != nil {
				t.Errorf("exit: %v\n%s", err, m.Log())
			}
			if el > 5*time.Second {
				t.Errorf("the server exited %v after SIGINT, want about a second", el)
			}
			for range 3 {
				select {
				case r := <-reads:
					if !errors.Is(r.err, syscall.EIO) {
						t.Errorf("a read stuck at the unmount: %v, want EIO", r.err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a read still hangs after the server exited")
				}
			}
			if mounttest.Mounted(m.Dir) {
				t.Error("left mounted")
			}
			t.Logf("exited %v after SIGINT", el.Round(time.Millisecond))
		})
	}
}

// TestS3UnreachableCommands: log, cat and mount against a dead endpoint
// (connection refused, default flags) and a silent one (accepts, never
// answers; --s3-timeout 8s): an info line within seconds says what is
// retried or awaited, and the command fails with status 1 and one line
// naming the table and the cause, within the bound the README states.
func TestS3UnreachableCommands(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	dead := s3test.NewFake(t, nil)
	dead.Stop()
	silent := s3test.StartSilent(t)
	s3Env(t, dead.Endpoint)
	for _, ep := range []struct {
		name, endpoint string
		args           []string
		info           string        // the first info line
		infoWithin     time.Duration // when it must come
		cause          string        // in the error line
		bound          time.Duration // when the command must have failed
	}{
		// 5 attempts, backoff under 11 s in all.
		{"dead", dead.Endpoint, nil, `msg="s3: a request failed; retrying"`, 5 * time.Second, "connection refused", 30 * time.Second},
		// Attempts time out after 8 s; down after two (DownAfter 10 s):
		// about 18 s.
		{"silent", silent.Endpoint, []string{"--s3-timeout", "8s"}, `msg="s3: no answer from the endpoint yet; still waiting"`, 10 * time.Second, "no answer within 8s", 45 * time.Second},
	} {
		for _, cmd := range []string{"log", "cat", "mount"} {
			t.Run(ep.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				args := []string{cmd, downLoc}
				if cmd == "mount" {
					args = append(args, t.TempDir(), "--cache-dir", "none")
				}
				args = append(append(args, ep.args...), s3Flags(ep.endpoint)...)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				c := exec.CommandContext(ctx, bin, args...)
				var stderr testkit.SyncBuffer
				c.Stderr = &stderr
				start := time.Now()
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				var infoAt time.Duration
				var err error
			wait:
				for {
					select {
					case err = <-done:
						break wait
					case <-time.After(20 * time.Millisecond):
					}
					if infoAt == 0 && strings.Contains(stderr.String(), ep.info) {
						infoAt = time.Since(start)
					}
				}
				el := time.Since(start)
				out := stderr.String()
				if infoAt == 0 && strings.Contains(out, ep.info) {
					infoAt = el
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("exit %v after %v, want status 1:\n%s", err, el, out)
				}
				if infoAt == 0 || infoAt > ep.infoWithin {
					t.Errorf("info line %s after %v, want within %v:\n%s", ep.info, infoAt, ep.infoWithin, out)
				}
				if el > ep.bound {
					t.Errorf("failed after %v, want within %v", el, ep.bound)
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				last := lines[len(lines)-1]
				if !strings.HasPrefix(last, "deltafs: "+downLoc+": ") || !strings.Contains(last, ep.cause) || strings.Count(last, downLoc) != 1 {
					t.Errorf("error line %q: want one line naming %s and %q", last, downLoc, ep.cause)
				}
				for _, l := range lines[:len(lines)-1] {
					if !strings.HasPrefix(l, "time=") {
						t.Errorf("stderr line %q is neither a log line nor the error line", l)
					}
				}
				if n := len(testkit.LogLines(out, "INFO", "msg=\"s3: ")); n > 2 {
					t.Errorf("%d info lines about retries and waits, want at most one of each:\n%s", n, out)
				}
				t.Logf("info after %v, failed after %v: %s", infoAt.Round(time.Millisecond), el.Round(time.Millisecond), last)
			})
		}
	}
}

// TestDownAfterFlag: --down-after applies to S3, Azure and GCS, and
// --s3-down-after, its former name, still works (with a deprecation
// notice). Against a dead endpoint (nothing listens) with 20 retries,
// which would take about a minute of backoff, `deltafs log` fails within
// seconds once the endpoint is declared down; with --down-after 0 it
// spends its retries and never says unreachable; a negative one is bad
// usage. The line a command ends with never says "retrying every 5s"
// (only a mount retries).
func TestDownAfterFlag(t *testing.T) {
	bin := mounttest.Binary(t)
	port, err := cloudtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("http://127.0.0.1:%d", port)
	s3Env(t, dead)
	azEnv(t, dead+"/"+aztest.Account)
	gcstest.Env(t)
	for _, cl := range []struct {
		name, loc string
		flags     []string
		retries   string
	}{
		{"s3", "s3://train/mnist", s3Flags(dead), "--s3-retries"},
		{"azure", "az://train/mnist", nil, "--azure-retries"},
		{"gcs", "gs://train/mnist", []string{"--gcs-endpoint", dead, "--gcs-anonymous"}, "--gcs-retries"},
	} {
		for _, tc := range []struct {
			name  string
			args  []string
			code  int
			want  []string // in the last line
			bound time.Duration
		}{
			{"down-after", []string{"--down-after", "1s", cl.retries, "20"}, 1,
				[]string{cl.loc + ": endpoint " + dead + " unreachable since", "(connection refused)"}, 20 * time.Second},
			{"s3-down-after", []string{"--s3-down-after", "1s", cl.retries, "20"}, 1,
				[]string{cl.loc + ": endpoint " + dead + " unreachable since"}, 20 * time.Second},
			{"never", []string{"--down-after", "0", cl.retries, "2"}, 1,
				[]string{"connection refused", "gave up after 3 attempts"}, 30 * time.Second},
			{"negative", []string{"--down-after", "-1s"}, 2, []string{"--down-after must not be negative"}, 10 * time.Second},
		} {
			t.Run(cl.name+"/"+tc.name, func(t *testing.T) {
				start := time.Now()
				_, stderr, code := runBin(t, bin, time.Minute, append(append([]string{"log", cl.loc}, tc.args...), cl.flags...)...)
				el := time.Since(start)
				last := lastLine(stderr)
				if code != tc.code {
					t.Fatalf("exit %d after %v, want %d:\n%s", code, el, tc.code, stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(last, w) {
						t.Errorf("error line %q: want %q", last, w)
					}
				}
				if strings.Contains(last, "retrying") {
					t.Errorf("error line %q of a command that ends says it is retrying", last)
				}
				if tc.name == "never" && strings.Contains(stderr, "unreachable") {
					t.Errorf("declared down with --down-after 0:\n%s", stderr)
				}
				if dep := strings.Contains(stderr, "--s3-down-after has been deprecated, use --down-after"); dep != (tc.name == "s3-down-after") {
					t.Errorf("deprecation notice %v for %s:\n%s", dep, tc.name, stderr)
				}
				if el > tc.bound {
					t.Errorf("failed after %v, want within %v", el, tc.bound)
				}
				t.Logf("%v: %s", el.Round(time.Millisecond), last)
			})
		}
	}
}
