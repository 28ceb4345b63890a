package csi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// The plugin against csi-sanity and against the failures a node sees:
// real `deltafs mount` processes, real FUSE mounts of a real table.

// table is a test table every volume mounts.
func table(t *testing.T) string {
	return filepath.Join(testkit.Tables(), "deltars-simple_table")
}

// plugin is a driver serving at a socket, and a client of it.
type plugin struct {
	d      *Driver
	sock   string
	state  string
	log    *syncBuffer
	cancel context.CancelFunc
	done   chan error
	node   csi.NodeClient
}

// syncBuffer is a log the plugin's goroutines write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startPlugin serves a driver whose state is in state.
func startPlugin(t *testing.T, state string) *plugin {
	t.Helper()
	mounttest.RequireFUSE(t)
	p := &plugin{state: state, sock: filepath.Join(state, "csi.sock"), log: newSyncBuffer(), done: make(chan error, 1)}
	d, err := New(Config{NodeID: "node-1", StateDir: state, Binary: mounttest.Binary(t), Version: "test",
		Logger: slog.New(slog.NewTextHandler(p.log, nil)), Ready: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p.d = d
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- d.Serve(ctx, "unix://"+p.sock) }()
	conn, err := grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p.node = csi.NewNodeClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := csi.NewIdentityClient(conn).Probe(context.Background(), &csi.ProbeRequest{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin does not answer Probe")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// stop ends the plugin (not its mounts).
func (p *plugin) stop() {
	p.cancel()
	<-p.done
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	}
}

func (p *plugin) publish(vol, target string, attrs, secrets map[string]string) error {
	_, err := p.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: vol, TargetPath: target, VolumeCapability: mountCap(), VolumeContext: attrs, Secrets: secrets, Readonly: true})
	return err
}

func (p *plugin) unpublish(vol, target string) error {
	_, err := p.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target})
	return err
}

// cleanupTargets unpublishes whatever the test left mounted.
func cleanupTargets(t *testing.T, targets ...string) {
	t.Cleanup(func() {
		for _, tg := range targets {
			if fusefs.Mounted(tg) {
				mounttest.Unmount(tg)
			}
		}
	})
}

// samples are the sample files under dir/latest/shard/0.
func samples(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	shard := filepath.Join(dir, "latest", "shard", "0")
	entries, err := os.ReadDir(shard)
	if err != nil {
		t.Fatalf("listing %s: %v", shard, err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "_") {
			continue // _samples.tsv, _extents.tsv: of each mount's cache
		}
		b, err := os.ReadFile(filepath.Join(shard, e.Name()))
		if err != nil {
			t.Fatalf("reading %s: %v", e.Name(), err)
		}
		out[e.Name()] = b
	}
	if len(out) == 0 {
		t.Fatalf("%s is empty", shard)
	}
	return out
}

// csi-sanity, the CSI project's conformance suite, against the plugin:
// every test of the services it advertises, with volumes that are real
// mounts of a real table.
func TestSanity(t *testing.T) {
	state := t.TempDir()
	p := startPlugin(t, state)
	defer p.stop()
	cfg := sanity.NewTestConfig()
	cfg.Address = "unix://" + p.sock
	// csi-test's utils.Connect reads the connection's state once grpc.Dial
	// returns and waits for it to change: a connection already Ready by
	// then (the test descheduled between the two on a loaded machine)
	// never changes, and Connect fails after a minute with "Connection
	// timed out" (seen once in a full `make test`). Resolving the socket's
	// address a moment after the dial keeps the connection from being
	// Ready before Connect looks; Connect's own dialer dials the socket.
	delayed := manual.NewBuilderWithScheme("unix")
	delayed.BuildCallback = func(resolver.Target, resolver.ClientConn, resolver.BuildOptions) {
		go func() {
			time.Sleep(200 * time.Millisecond)
			delayed.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: p.sock}}})
		}()
	}
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithResolvers(delayed))
	cfg.TargetPath = filepath.Join(t.TempDir(), "target")
	cfg.StagingPath = filepath.Join(t.TempDir(), "staging")
	cfg.TestVolumeParameters = map[string]string{"table": table(t), "shards": "2"}
	cfg.IdempotentCount = 2
	cfg.TestVolumeSize = 0
	cleanupTargets(t, cfg.TargetPath+"/target")
	sanity.Test(t, cfg)
	if entries, _ := os.ReadDir(filepath.Join(state, "mounts")); len(entries) != 0 {
		t.Errorf("state left after every volume was unpublished: %v", entries)
	}
}

// A publish serves the table's samples at the target; a restart of the
// plugin keeps the mount serving and adopts it; an unpublish after the
// restart unmounts it, ends its process and removes the target and its
// state.
func TestPublishSurvivesRestart(t *testing.T) {
	state := t.TempDir()
	target := filepath.Join(t.TempDir(), "pod", "volume")
	cleanupTargets(t, target)
	p := startPlugin(t, state)
	attrs := map[string]string{"table": table(t)}
	if err := p.publish("vol-1", target, attrs, nil); err != nil {
		t.Fatal(err)
	}
	want := samples(t, target)
	if err := p.publish("vol-1", target, attrs, nil); err != nil {
		t.Fatalf("a second identical publish: %v", err)
	}
	if err := p.publish("vol-1", target, map[string]string{"table": table(t), "shards": "3"}, nil); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("a publish of the same target with other attributes: %v, want AlreadyExists", err)
	}
	pid := p.d.ms.byTarget[target].rec.PID
	p.stop()
	got := samples(t, target)
	if len(got) != len(want) {
		t.Fatalf("after the plugin stopped: %d samples, want %d", len(got), len(want))
	}
	p2 := startPlugin(t, state)
	defer p2.stop()
	if !strings.Contains(p2.log.String(), "adopted") {
		t.Errorf("the restarted plugin did not adopt the mount: %s", p2.log.String())
	}
	if err := p2.publish("vol-1", target, attrs, nil); err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	if p2.d.ms.byTarget[target].rec.PID != pid {
		t.Errorf("publish after restart remade the mount (pid %d, was %d)", p2.d.ms.byTarget[target].rec.PID, pid)
	}
	if err := p2.unpublish("vol-1", target); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target is left after unpublish: %v", err)
	}
	if alive(pid) {
		t.Errorf("the mount's process %d is alive after unpublish", pid)
	}
	if err := p2.unpublish("vol-1", target); err != nil {
		t.Errorf("a second unpublish: %v", err)
	}
}

// A mount's server killed: one line in the plugin's log, the pod's reads
// fail (never old bytes), the other volume keeps serving, and the next
// publish remakes the mount.
func TestMountServerDies(t *testing.T) {
	state := t.TempDir()
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	cleanupTargets(t, a, b)
	p := startPlugin(t, state)
	defer p.stop()
	held := fuseFDs(t)
	attrs := map[string]string{"table": table(t)}
	for _, tg := range []string{a, b} {
		if err := p.publish("vol-"+filepath.Base(tg), tg, attrs, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := samples(t, b)
	pid := p.d.ms.byTarget[a].rec.PID
	p.killServer(t, pid)
	if n := strings.Count(p.log.String(), "a mount's server died"); n != 1 {
		t.Errorf("%d lines for one death", n)
	}
	// Nothing of a was read before: every read must fail. (Bytes the
	// kernel cached before the death are the version's true bytes and
	// may still be served from its page cache.)
	// The plugin holds the connection and answers EIO, the error a
	// loader takes for the I/O error it is (not ENOTCONN).
	for name := range want {
		if _, err := os.ReadFile(filepath.Join(a, "latest", "shard", "0", name)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("a read under the dead mount: %v, want EIO", err)
		}
	}
	if _, err := os.ReadDir(a); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a listing of the dead mount: %v, want EIO (a detached mount point shows an empty directory)", err)
	}
	if _, err := os.Stat(filepath.Join(a, "latest")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a stat under the dead mount: %v, want EIO", err)
	}
	if got := samples(t, b); len(got) != len(want) {
		t.Errorf("the other volume: %d samples, want %d", len(got), len(want))
	}
	if err := p.publish("vol-a", a, attrs, nil); err != nil {
		t.Fatalf("publish after the death: %v", err)
	}
	got := samples(t, a)
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s differs after the remount", name)
		}
	}
	for _, tg := range []string{a, b} {
		if err := p.unpublish("vol-"+filepath.Base(tg), tg); err != nil {
			t.Error(err)
		}
	}
	// Every held connection is let go: the one answered after the death
	// (its mount point detached at the new publish) and the live ones.
	for deadline := time.Now().Add(5 * time.Second); fuseFDs(t) != held; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d /dev/fuse descriptors open after unpublish, %d before publish", fuseFDs(t), held)
		}
	}
}

// fuseFDs counts this process's descriptors open on /dev/fuse (the
// plugin's held connections).
func fuseFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "/dev/fuse" {
			n++
		}
	}
	return n
}

// A mount adopted by a restarted plugin is held too: its server's death
// gives the pod EIO.
func TestAdoptedMountServerDies(t *testing.T) {
	state := t.TempDir()
	target := filepath.Join(t.TempDir(), "pod", "volume")
	cleanupTargets(t, target)
	p := startPlugin(t, state)
	attrs := map[string]string{"table": table(t)}
	if err := p.publish("vol-1", target, attrs, nil); err != nil {
		t.Fatal(err)
	}
	// Names only: bytes read before the death may be served from the
	// kernel's page cache after it.
	want, err := os.ReadDir(filepath.Join(target, "latest", "shard", "0"))
	if err != nil || len(want) == 0 {
		t.Fatalf("listing the shard: %d names, %v", len(want), err)
	}
	pid := p.d.ms.byTarget[target].rec.PID
	// The first plugin's process lives on here (it is this test): its
	// connections are released as its exit would.
	for _, m := range p.d.ms.byTarget {
		if m.conn != nil {
			m.conn.close(false)
		}
	}
	p.stop()
	p2 := startPlugin(t, state)
	defer p2.stop()
	if m := p2.d.ms.byTarget[target]; m == nil || m.conn == nil {
		t.Fatalf("the restarted plugin did not adopt and hold the mount: %s", p2.log.String())
	}
	p2.killServer(t, pid)
	for _, e := range want {
		if _, err := os.ReadFile(filepath.Join(target, "latest", "shard", "0", e.Name())); !errors.Is(err, syscall.EIO) {
			t.Fatalf("a read under the dead adopted mount: %v, want EIO", err)
		}
	}
	if err := p2.unpublish("vol-1", target); err != nil {
		t.Fatal(err)
	}
}

// Secrets reach the mount's process through its environment and files of
// mode 0600 only: never its command line, the plugin's log or an error.
func TestSecretsStayOffCommandLines(t *testing.T) {
	state := t.TempDir()
	target := filepath.Join(t.TempDir(), "t")
	cleanupTargets(t, target)
	p := startPlugin(t, state)
	defer p.stop()
	secrets := map[string]string{"awsAccessKeyID": "AKIASECRETKEY0000001", "awsSecretAccessKey": "s3cr3t-v4lue-for-the-test", "ucToken": "dapi-secret-token-000"}
	if err := p.publish("vol", target, map[string]string{"table": table(t)}, secrets); err != nil {
		t.Fatal(err)
	}
	pid := p.d.ms.byTarget[target].rec.PID
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	for _, s := range secrets {
		if bytes.Contains(cmdline, []byte(s)) {
			t.Errorf("a secret is on the mount's command line: %q", cmdline)
		}
		if !bytes.Contains(environ, []byte(s)) {
			t.Errorf("a secret did not reach the mount's environment")
		}
		if strings.Contains(p.log.String(), s) {
			t.Errorf("a secret is in the plugin's log")
		}
	}
	// A bad publish naming a secret's value in its attributes is refused
	// without echoing the secrets.
	err := p.publish("vol2", filepath.Join(t.TempDir(), "u"), map[string]string{"table": table(t), "nope": "x"}, secrets)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `unknown volume attribute "nope"`) {
		t.Errorf("an unknown attribute: %v", err)
	}
	err = p.publish("vol2", filepath.Join(t.TempDir(), "u"), map[string]string{"table": table(t)}, map[string]string{"password": "hunter2-secret"})
	if status.Code(err) != codes.InvalidArgument || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unknown secret: %v", err)
	}
	if err := p.unpublish("vol", target); err != nil {
		t.Fatal(err)
	}
}

// A volume whose table cannot be mounted fails the publish with the
// mount's own one-line error, and leaves nothing mounted or running.
func TestPublishFailsWithTheMountsError(t *testing.T) {
	state := t.TempDir()
	target := filepath.Join(t.TempDir(), "t")
	cleanupTargets(t, target)
	p := startPlugin(t, state)
	defer p.stop()
	err := p.publish("vol", target, map[string]string{"table": filepath.Join(t.TempDir(), "no-such-table")}, map[string]string{"googleServiceAccountKey": `{"type":"service_account"}`})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no-such-table") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v, want FailedPrecondition naming the table in one line", err)
	}
	if fusefs.Mounted(target) {
		t.Error("the target is mounted after a failed publish")
	}
	// Nothing is left in the state directory: no record, no secret file.
	if entries, _ := os.ReadDir(filepath.Join(state, "mounts")); len(entries) != 0 {
		t.Errorf("a failed publish left %d entries in the state directory (its secret files among them)", len(entries))
	}
	err = p.publish("vol", target, map[string]string{"table": table(t), "shards": "0"}, nil)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "shards") {
		t.Fatalf("%v, want the mount's refusal of --shards 0", err)
	}
}

// killServer kills the mount server pid and waits (10 s at most) for the
// plugin's line saying it died.
func (p *plugin) killServer(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.log.String(), "a mount's server died"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line says the server died: %s", p.log.String())
		}
	}
}
