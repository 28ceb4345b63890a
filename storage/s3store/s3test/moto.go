package s3test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"
)

// motoCandidates are tried in order when moto_server is not on PATH: where
// scripts/ensure-deps.sh installs it (make test), and the machine image's
// pyenv shim.
func motoCandidates() []string {
	var out []string
	if dir, err := os.UserCacheDir(); err == nil {
		out = append(out, filepath.Join(dir, "deltafs-moto", "bin", "moto_server"))
	}
	return append(out, "/root/.pyenv/shims/moto_server")
}

// MotoPath finds moto_server: on PATH, else at one of motoCandidates.
func MotoPath() (string, error) {
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p, nil
	}
	candidates := motoCandidates()
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("moto_server not found on PATH nor at " + strings.Join(candidates, ", ") + " (make deps installs it)")
}

// RequireMoto returns moto_server's path. When it is missing, the test fails
// under CI (CI=true), where moto is part of the machine image, and is
// skipped loudly elsewhere.
func RequireMoto(t testing.TB) string {
	t.Helper()
	p, err := MotoPath()
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("s3test: %v; make deps (scripts/ensure-deps.sh) installs it", err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " — required under CI=true")
	}
	t.Skip("SKIPPING moto tests: " + msg)
	return ""
}

// StartMoto starts moto_server on a free loopback port, waits until it
// answers (a Python server: seconds) and returns its endpoint; t.Cleanup stops it. moto
// keeps everything in memory, so each call starts from no buckets.
func StartMoto(t testing.TB) (endpoint string) {
	t.Helper()
	return startMotoT(t, nil)
}

func startMotoT(t testing.TB, env []string) (endpoint string) {
	t.Helper()
	bin := RequireMoto(t)
	var lastErr error
	for try := 0; try < 3; try++ {
		ep, stop, err := startMoto(bin, env)
		if err == nil {
			t.Cleanup(stop)
			return ep
		}
		lastErr = err
	}
	t.Fatalf("s3test: start moto_server: %v", lastErr)
	return ""
}

func startMoto(bin string, env []string) (endpoint string, stop func(), err error) {
	port, err := cloudtest.FreePort()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), env...)
	out := &cloudtest.OutputBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: the pyenv shim and python are stopped together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() { cloudtest.StopGroup(cmd, exited) }
	endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				client.CloseIdleConnections()
				return endpoint, stop, nil
			}
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("moto_server exited before it was ready: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("moto_server on port %d not ready after 30 s: %s", port, out.String())
		}
	}
}
