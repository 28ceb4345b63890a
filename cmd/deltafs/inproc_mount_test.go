package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// Mounts served in the test process by runMount (the command's own code),
// for tests that need the mount's counters and log as the code has them
// (the fault suites). Read them with readNoPoll, never os.ReadFile.

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

// shard is version 0's only shard.
func (m *inProcMount) shard() string { return filepath.Join(m.dir, "version", "0", "shard", "0") }

// readNoPoll reads a whole file with plain system calls. os.ReadFile
// registers the file with the Go runtime's epoll, and epoll_ctl on a FUSE
// file sends POLL to the server and waits, holding the epoll instance's
// lock: when the server is this very process (an in-process mount) and its
// request handlers wait on network reads that need that lock, nothing
// moves again. A mount in its own process (deltafs mount) cannot meet it.
func readNoPoll(path string) ([]byte, error) {
	// A signal to the reading thread (the Go runtime preempts with
	// SIGURG) interrupts a FUSE request; the kernel then answers EINTR,
	// and a loader retries, as CPython does (PEP 475) and os.Open does.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
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

// readSamples reads files (relative to the shard) with 4 workers, as a
// data loader does, and returns what each read returned. Reads that do not
// end within a minute are a hang: errs[""] says so.
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

// firstKey is the smallest key of m ("" for none).
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
