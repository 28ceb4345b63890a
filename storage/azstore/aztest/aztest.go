// Package aztest runs Azurite, the Azure Storage emulator (npm package
// azurite, Blob service only), on a free loopback port for tests and
// benchmarks, and fills it: containers, blobs, whole local tables. Fake
// puts Azurite (on disk) behind an in-process front that fault middleware
// can wrap and that restarts with it, as s3test.Fake and gcstest.Fake do
// for their servers; WriteError answers as the Blob service does when it
// throttles or fails; ClearEnv empties the Azure credential chain.
//
// Azurite is found as $AZURITE_BLOB, else azurite-blob on PATH, else under
// ${XDG_CACHE_HOME:-~/.cache}/deltafs-azurite, where scripts/ensure-deps.sh
// (run by `make test`) installs it with npm. A missing Azurite fails the
// test with a line saying how to install it.
package aztest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/storage/cloudtest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltafs/deltafs/storage/azstore"
)

// Account and Key are Azurite's well-known development account.
const (
	Account = azstore.DevAccount
	Key     = azstore.DevKey
)

// Path finds azurite-blob.
func Path() (string, error) {
	if p := os.Getenv("AZURITE_BLOB"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("azurite-blob"); err == nil {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "deltafs-azurite", "node_modules", ".bin", "azurite-blob")
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p, nil
	}
	return "", errors.New("azurite-blob not found ($AZURITE_BLOB, PATH, " + p + "); run scripts/ensure-deps.sh (needs node and npm) or `npm install --prefix ~/.cache/deltafs-azurite azurite@3.37.0`")
}

// Server is a running Azurite.
type Server struct {
	Port     int
	Endpoint string // Blob service URL of the account: http://127.0.0.1:PORT/devstoreaccount1
	dir      string // its workspace ("" in memory)
	bin      string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	out    *cloudtest.OutputBuffer
}

// Options of Start.
type Options struct {
	// OnDisk keeps the data in a temporary directory instead of memory, so
	// that Stop and Start (a restart) keep it.
	OnDisk bool
}

// Start starts Azurite on a free loopback port and waits until it
// answers; t.Cleanup stops it.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dir := ""
	if o.OnDisk {
		dir = t.TempDir()
	}
	s, err := New(dir)
	if err != nil {
		t.Fatalf("aztest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New is Start outside a test: dir is the workspace ("" keeps the data in
// memory); the caller stops it.
func New(dir string) (*Server, error) {
	bin, err := Path()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		port, err := cloudtest.FreePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Port: port, Endpoint: fmt.Sprintf("http://127.0.0.1:%d/%s", port, Account), dir: dir, bin: bin}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *Server) start() error {
	args := []string{"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(s.Port),
		"--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"}
	if s.dir == "" {
		args = append(args, "--inMemoryPersistence", "--extentMemoryLimit", "1024")
	} else {
		args = append(args, "--location", s.dir)
	}
	cmd := exec.Command(s.bin, args...)
	out := &cloudtest.OutputBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // node and its children stop together
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited, s.out = cmd, exited, out
	s.mu.Unlock()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Any answer (400 for a bare account URL) means it listens.
		if resp, err := client.Get(s.Endpoint + "?comp=list"); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("azurite exited before it was ready: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("azurite on port %d not ready after 30 s: %s", s.Port, out.String())
		}
	}
}

// Stop stops Azurite (SIGTERM, then SIGKILL after 5 s). With OnDisk, Start
// brings it back with its data.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cloudtest.StopGroup(cmd, exited)
}

// Restart starts a stopped server again on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("aztest: restart azurite: %v", err)
	}
}

// ConnString is a connection string for the development account at
// endpoint (the server's, or a proxy's in front of it).
func ConnString(endpoint string) string {
	return "DefaultEndpointsProtocol=http;AccountName=" + Account + ";AccountKey=" + Key + ";BlobEndpoint=" + endpoint + ";"
}

// Client is a container client with the development account's key.
func Client(endpoint, containerName string) (*container.Client, error) {
	cred, err := container.NewSharedKeyCredential(Account, Key)
	if err != nil {
		return nil, err
	}
	return container.NewClientWithSharedKeyCredential(strings.TrimSuffix(endpoint, "/")+"/"+containerName, cred, nil)
}

// CreateContainer creates a container (public: with anonymous read
// access to its blobs and listing).
func CreateContainer(t testing.TB, endpoint, name string, public bool) {
	t.Helper()
	if err := Create(context.Background(), endpoint, name, public); err != nil {
		t.Fatalf("aztest: create container %s: %v", name, err)
	}
}

// Create is CreateContainer outside a test.
func Create(ctx context.Context, endpoint, name string, public bool) error {
	c, err := Client(endpoint, name)
	if err != nil {
		return err
	}
	o := &container.CreateOptions{}
	if public {
		a := container.PublicAccessTypeContainer
		o.Access = &a
	}
	_, err = c.Create(ctx, o)
	return err
}

// Put stores one blob.
func Put(t testing.TB, endpoint, containerName, name string, data []byte) {
	t.Helper()
	c, err := Client(endpoint, containerName)
	if err == nil {
		_, err = c.NewBlockBlobClient(name).Upload(context.Background(), streaming.NopCloser(bytes.NewReader(data)), nil)
	}
	if err != nil {
		t.Fatalf("aztest: put %s: %v", name, err)
	}
}

// UploadDir uploads every regular file under localDir to prefix/relpath
// in the container and returns the count.
func UploadDir(t testing.TB, endpoint, containerName, prefix, localDir string) int {
	t.Helper()
	n, err := Upload(context.Background(), endpoint, containerName, prefix, localDir)
	if err != nil {
		t.Fatalf("aztest: upload %s: %v", localDir, err)
	}
	return n
}

// Upload is UploadDir outside a test.
func Upload(ctx context.Context, endpoint, containerName, prefix, localDir string) (int, error) {
	c, err := Client(endpoint, containerName)
	if err != nil {
		return 0, err
	}
	return cloudtest.WalkFiles(localDir, func(name string, data []byte) error {
		if prefix != "" {
			name = strings.TrimSuffix(prefix, "/") + "/" + name
		}
		if _, err := c.NewBlockBlobClient(name).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// Fake is Azurite with its data on disk behind an in-process front: a
// reverse proxy on a loopback listener whose handler a test may wrap
// (faults: cloudtest.ErrorSwitch with WriteError, cloudtest.Staller), like
// s3test.Fake and gcstest.Fake. Stop and Start restart both, on the same
// addresses and with the same blobs, like a server that goes away and
// comes back.
type Fake struct {
	Endpoint string // the account's Blob service URL through the front: http://127.0.0.1:PORT/devstoreaccount1
	Server   *Server

	*cloudtest.Loopback // the front: Addr, OpenConns (connections to the front)
	tr                  *http.Transport
}

// NewFake starts Azurite (on disk) and its front; wrap, if not nil, wraps
// the front's handler. t.Cleanup stops both.
func NewFake(t testing.TB, wrap func(http.Handler) http.Handler) *Fake {
	t.Helper()
	srv := Start(t, Options{OnDisk: true})
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	// No keep-alive to Azurite: no idle connection (and its goroutines)
	// outlives a request, and none goes stale across a restart.
	tr := &http.Transport{DisableKeepAlives: true}
	rp.Transport = tr
	rp.ErrorLog = log.New(io.Discard, "", 0)
	var h http.Handler = rp
	if wrap != nil {
		h = wrap(h)
	}
	ln, err := cloudtest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	f := &Fake{Server: srv, Loopback: cloudtest.ServeLoopback(ln, h), tr: tr}
	f.Endpoint = "http://" + f.Addr + u.Path
	t.Cleanup(f.Stop)
	return f
}

// Stop stops the front, then Azurite.
func (f *Fake) Stop() {
	f.Loopback.Stop()
	f.tr.CloseIdleConnections()
	f.Server.Stop()
}

// Start restarts Azurite, then the front.
func (f *Fake) Start(t testing.TB) {
	t.Helper()
	f.Server.mu.Lock()
	stopped := f.Server.cmd == nil
	f.Server.mu.Unlock()
	if stopped {
		f.Server.Restart(t)
	}
	f.Loopback.Start(t)
}

// WriteError writes a Blob service error answer: status, the code in
// x-ms-error-code and in the body (none for HEAD), as the service does
// when it throttles (503 ServerBusy).
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` + message + `</Message></Error>`))
	}
}

// ClearEnv empties the Azure credential chain's environment for the test
// (and the child processes it starts): no connection string, account, key,
// SAS token or service principal, and an empty Azure CLI configuration,
// so that no login of the machine's user answers for a test.
func ClearEnv(t testing.TB) {
	t.Helper()
	for _, v := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT",
		"AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
		"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CONFIG_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("AZURE_CONFIG_DIR", t.TempDir())
}
