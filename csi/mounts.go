package csi

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/fusefs"
)

// record is a publish, as kept in the state directory: what lets a
// restarted plugin find its mounts.
type record struct {
	VolumeID string `json:"volumeId"`
	Target   string `json:"target"`
	PID      int    `json:"pid"`
	Digest   string `json:"digest"`
}

// mounts are the plugin's mounts, by target path.
type mounts struct {
	dir    string // state directory: one subdirectory per target
	binary string // the deltafs binary
	log    *slog.Logger
	ready  time.Duration // how long a mount may take to appear

	mu       sync.Mutex
	byTarget map[string]*mount
}

// mount is one running `deltafs mount`.
type mount struct {
	rec     record
	dir     string
	exited  chan struct{} // closed when the process has ended
	stopped bool          // ended by unpublish (under mounts.mu)
	// conn holds the mount's FUSE connection, answered with EIO once
	// the server died (conn.go); nil when it could not be held.
	conn *heldConn
}

// hold clones m's FUSE connection; a failure costs only the error the
// pod sees after a death of the server (ENOTCONN instead of EIO).
func (ms *mounts) hold(m *mount) {
	c, err := holdConn(m.rec.PID)
	if err != nil {
		ms.log.Warn("csi: cannot hold the mount's FUSE connection: if its server dies, the pod sees ENOTCONN rather than EIO", "volume", m.rec.VolumeID, "target", m.rec.Target, "err", err)
		return
	}
	m.conn = c
}

// volumeDir is the state directory of the mount at target.
func (ms *mounts) volumeDir(target string) string {
	h := sha256.Sum256([]byte(target))
	return filepath.Join(ms.dir, hex.EncodeToString(h[:12]))
}

// adopt reads the records a previous run of the plugin left: a mount
// whose process still serves its target is kept and watched; one whose
// process is gone is detached and forgotten.
func (ms *mounts) adopt() {
	entries, _ := os.ReadDir(ms.dir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(ms.dir, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "record.json"))
		var rec record
		if err != nil || json.Unmarshal(b, &rec) != nil || rec.Target == "" {
			_ = os.RemoveAll(dir)
			continue
		}
		if alive(rec.PID) && fusefs.Mounted(rec.Target) {
			m := &mount{rec: rec, dir: dir, exited: make(chan struct{})}
			ms.hold(m)
			ms.byTarget[rec.Target] = m
			go ms.watchAdopted(m)
			ms.log.Info("csi: adopted a mount of a previous run", "volume", rec.VolumeID, "target", rec.Target, "pid", rec.PID)
			continue
		}
		// Its mount point stays as it is (a dead mount fails every
		// access): detached, it would show the pod an empty directory.
		ms.log.Warn("csi: a mount of a previous run has no server any more; the next publish remakes it", "volume", rec.VolumeID, "target", rec.Target)
		_ = os.RemoveAll(dir)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// detach unmounts target lazily if it is a deltafs mount.
func detach(target string) {
	if m, ok, _ := fusefs.FindMount(target); ok && m.FSType == fusefs.FSType {
		_ = fusefs.Unmount(target, true)
	}
}

// start runs `deltafs mount` for spec at target and waits until the mount
// point serves, or the process ends (its last log line is the error), or
// ms.ready passes. A failed start leaves no state behind: the volume's
// directory, with its secret files, is removed.
func (ms *mounts) start(volumeID, target string, spec mountSpec) (*mount, error) {
	dir := ms.volumeDir(target)
	m, err := ms.launch(volumeID, target, dir, spec)
	if err != nil {
		_ = os.RemoveAll(dir)
	}
	return m, err
}

func (ms *mounts) launch(volumeID, target, dir string, spec mountSpec) (*mount, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %v", err)
	}
	if err := spec.writeFiles(dir); err != nil {
		return nil, fmt.Errorf("writing the volume's secret files: %v", err)
	}
	logPath := filepath.Join(dir, "mount.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mount log: %v", err)
	}
	cmd := exec.Command(ms.binary, append([]string{"mount"}, spec.args...)...)
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: a signal to the plugin (a restart) does not end
	// the mounts it made.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting deltafs mount: %v", err)
	}
	logf.Close()
	m := &mount{rec: record{VolumeID: volumeID, Target: target, PID: cmd.Process.Pid, Digest: spec.digest()}, dir: dir, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(m.exited) }()
	deadline := time.After(ms.ready)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !fusefs.Mounted(target) {
		select {
		case <-m.exited:
			return nil, fmt.Errorf("%s", lastLine(logPath))
		case <-deadline:
			_ = syscall.Kill(-m.rec.PID, syscall.SIGKILL)
			<-m.exited
			detach(target)
			return nil, fmt.Errorf("the mount did not appear within %v (last line: %s)", ms.ready, lastLine(logPath))
		case <-tick.C:
		}
	}
	ms.hold(m)
	b, _ := json.Marshal(m.rec)
	if err := os.WriteFile(filepath.Join(dir, "record.json"), b, 0o600); err != nil {
		ms.stop(m)
		return nil, fmt.Errorf("recording the mount: %v", err)
	}
	go ms.watch(m)
	return m, nil
}

// watch logs one line when m's process ends other than by unpublish. The
// dead mount point stays mounted, so that every access under it fails
// (EIO, answered on the held connection; ENOTCONN without it): detached,
// it would show the pod the empty directory below it, a dataset of no
// samples. The next publish or unpublish detaches it, which ends the
// connection and the answering.
func (ms *mounts) watch(m *mount) {
	<-m.exited
	ms.mu.Lock()
	stopped := m.stopped
	if !stopped && ms.byTarget[m.rec.Target] == m {
		delete(ms.byTarget, m.rec.Target)
	}
	ms.mu.Unlock()
	if stopped {
		return
	}
	if m.conn != nil {
		go m.conn.answer()
	}
	ms.log.Error("csi: a mount's server died: the pod's reads fail until the volume is published again",
		"volume", m.rec.VolumeID, "target", m.rec.Target, "pid", m.rec.PID, "last_line", lastLine(filepath.Join(m.dir, "mount.log")))
	_ = os.Remove(filepath.Join(m.dir, "record.json"))
}

// watchAdopted watches a process the plugin did not start (no Wait).
func (ms *mounts) watchAdopted(m *mount) {
	for alive(m.rec.PID) {
		time.Sleep(time.Second)
	}
	close(m.exited)
	ms.watch(m)
}

// stop ends m: SIGTERM (the mount unmounts itself, lazily when busy),
// then SIGKILL after 15 s; the mount point is detached if it is left.
func (ms *mounts) stop(m *mount) {
	ms.mu.Lock()
	m.stopped = true
	ms.mu.Unlock()
	_ = syscall.Kill(m.rec.PID, syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-m.rec.PID, syscall.SIGKILL)
		<-m.exited
	}
	detach(m.rec.Target)
	if m.conn != nil {
		m.conn.close(false)
	}
	_ = os.RemoveAll(m.dir)
}

// lastLine is the last non-empty line of the log at path, at most 500
// bytes, without its slog prefix (time=... level=...): the mount's error.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "deltafs mount ended without a log"
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if last == "" {
		return "deltafs mount ended without a word"
	}
	if len(last) > 500 {
		last = last[:500] + "..."
	}
	return last
}
