package cloudtest

import (
	"bytes"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// FreePort is a loopback port free now, for a child server that takes its
// port on the command line (it may be taken before the child binds it:
// retry the start).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// OutputBuffer keeps the last output of a child (up to about 64 KiB) for
// error messages; it is safe for concurrent use.
type OutputBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *OutputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		b.buf.Reset()
	}
	return b.buf.Write(p)
}

func (b *OutputBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// StopGroup stops the process group of cmd, started with Setpgid (a shim
// and the server it runs stop together): SIGTERM, then SIGKILL after 5 s.
// exited is closed when cmd.Wait returns.
func StopGroup(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}
