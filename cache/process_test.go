package cache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary re-executes itself as a child process for the crash and
// multi-process tests: DELTAFS_CACHE_TEST_CHILD names the role, and the
// child never reaches m.Run.
const childEnv = "DELTAFS_CACHE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch role := os.Getenv(childEnv); role {
	case "":
		os.Exit(m.Run())
	case "writer":
		childWriter(os.Getenv("DIR"))
	case "mixed":
		seed, _ := strconv.Atoi(os.Getenv("SEED"))
		d, _ := time.ParseDuration(os.Getenv("DURATION"))
		if err := mixedWorkload(os.Getenv("DIR"), uint64(seed), d, 2); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown child role", role)
		os.Exit(2)
	}
}

// crashSize gives payloads from 1 KiB to 2 MiB, so that a write takes long
// enough to be killed in the middle of.
func crashSize(k Key) int { return 1<<10 + int(payload(k, 4)[0])*(8<<10) }

// childWriter writes entries forever, until it is killed.
func childWriter(dir string) {
	c, err := New(Options{Dir: dir, DiskBytes: 32 << 20, MinFreeFraction: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		k := key(i % 200)
		c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return payload(k, crashSize(k)), nil })
	}
}

func child(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if stderr.Len() > 0 {
			t.Logf("child %s stderr:\n%s", role, stderr.String())
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestCrashMidWrite kills a writing child process with SIGKILL, several
// times, mostly while a temp file exists (a write in progress), and checks
// that the next open removes the dead writer's temp files and that every
// entry it finds is whole and correct.
func TestCrashMidWrite(t *testing.T) {
	dir := t.TempDir()
	midWrite := 0
	for round := range 4 {
		cmd := child(t, "writer", "DIR="+dir)
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, temps := ownFiles(t, dir)
			entries, _ := ownFiles(t, dir)
			if len(temps) > 0 && len(entries) > round*3 {
				midWrite++
				break
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		log, logs := testLogger(t)
		c, err := New(Options{Dir: dir, DiskBytes: 32 << 20, MinFreeFraction: -1, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		if _, temps := ownFiles(t, dir); len(temps) != 0 {
			t.Fatalf("round %d: temp files of the killed writer survived open: %v", round, temps)
		}
		found := 0
		for i := range 200 {
			k := key(i)
			if v, ok := c.Peek(k); ok {
				found++
				if !bytes.Equal(v, payload(k, crashSize(k))) {
					t.Fatalf("round %d: entry %d has wrong bytes", round, i)
				}
			}
		}
		if s := c.Stats(); s.Corrupt != 0 {
			t.Fatalf("round %d: %d corrupt entries after a kill:\n%s", round, s.Corrupt, logs.String())
		}
		c.Close()
		t.Logf("round %d: killed with a temp file present: %v; %d valid entries", round, midWrite > round, found)
		if found == 0 {
			t.Fatalf("round %d: the writer wrote nothing", round)
		}
	}
	if midWrite == 0 {
		t.Fatal("never caught the writer mid-write")
	}
}

// mixedWorkload reads and writes random keys through one Cache on dir with
// a budget small enough to evict constantly, verifying every byte.
func mixedWorkload(dir string, seed uint64, d time.Duration, goroutines int) error {
	c, err := New(Options{MemBytes: 256 << 10, Dir: dir, DiskBytes: 1 << 20, MinFreeFraction: -1,
		RescanInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer c.Close()
	size := func(k Key) int { return 500 + int(payload(k, 2)[1])*200 }
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for n := 0; time.Now().Before(stop); n++ {
				k := key(rng.IntN(300))
				want := payload(k, size(k))
				got, err := c.Get(context.Background(), k, func(context.Context) ([]byte, error) { return bytes.Clone(want), nil })
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, want) {
					errs <- fmt.Errorf("wrong bytes for %v", k)
					return
				}
				if n%7 == 0 {
					if p, off, ln, ok := c.Locate(k); ok {
						if b, err := readAt(p, off, ln); err == nil && !bytes.Equal(b, want) {
							errs <- fmt.Errorf("located bytes differ for %v", k)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if s := c.Stats(); s.Corrupt != 0 || s.DiskWriteErrors != 0 {
		return fmt.Errorf("stats after the workload: %+v", s)
	}
	return nil
}

// readAt reads a located extent. The file may have been evicted meanwhile
// (an error, not wrong bytes).
func readAt(p string, off, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	return b, err
}

// TestTwoProcesses: this process and a child share one directory, both
// reading and writing under constant eviction, both checking every byte.
func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	const d = 2 * time.Second
	cmd := child(t, "mixed", "DIR="+dir, "SEED=7", "DURATION="+d.String())
	if err := mixedWorkload(dir, 8, d, 3); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.TempFiles != 0 || u.Bytes > 2<<20 {
		t.Fatalf("after two processes: %+v", u)
	}
	t.Logf("after two processes: %d entries, %d bytes (budget 1 MiB each)", u.Entries, u.Bytes)
}
