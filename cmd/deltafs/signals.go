package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/deltafs/deltafs/internal/oneline"
	"github.com/deltafs/deltafs/internal/secret"
)

// Interrupts. SIGINT and SIGTERM cancel the command's context, with the
// signal as the cause (interruption), and every command returns promptly:
// storage calls, imports and scans check their context. What no context
// reaches is a system call stuck in the kernel (a read from a hung NFS
// server or a stalled FUSE filesystem under the table): when the command is
// still running exitGrace after the signal, or a second signal comes (at
// least sameSignal after the first), deltafs runs the forced-exit hooks (a
// mount detaches its mount point) and exits at once with status 1 and one
// line saying why.

// exitGrace bounds how long a command may take to return after SIGINT or
// SIGTERM. A mount's own shutdown (mountStopBudget) fits within it.
const exitGrace = 10 * time.Second

// hookBudget bounds the forced-exit hooks together.
const hookBudget = 2 * time.Second

// sameSignal: signals that come within this of the first are the same
// interruption, delivered more than once. One Ctrl-C reaches every process
// of the terminal's foreground group, so a script that forwards it to its
// background deltafs (make demo) delivers it twice; `timeout` sends its
// signal to the command and then to the command's whole group. A person
// who presses Ctrl-C again to get out at once does so later than this.
const sameSignal = time.Second

// interrupted is the cause of a context canceled by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + signalName(i.sig) }

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// interruption is the signal's error when ctx was canceled by SIGINT or
// SIGTERM, else nil.
func interruption(ctx context.Context) error {
	var i interrupted
	if errors.As(context.Cause(ctx), &i) {
		return i
	}
	return nil
}

var (
	hooksMu sync.Mutex
	hooks   = map[int]func(){}
	hookID  int
)

// atForcedExit registers f to run before a forced exit (within
// hookBudget, together with the others); the returned function removes it.
func atForcedExit(f func()) (remove func()) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	hookID++
	id := hookID
	hooks[id] = f
	return func() {
		hooksMu.Lock()
		defer hooksMu.Unlock()
		delete(hooks, id)
	}
}

// handleSignals makes SIGINT and SIGTERM cancel ctx's cancel with their
// cause, and forces the exit on a second signal or after exitGrace. stop
// ends the handling (when the command returned).
func handleSignals(cancel context.CancelCauseFunc) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		first := time.Now()
		cancel(interrupted{sig})
		grace := time.NewTimer(exitGrace)
		defer grace.Stop()
		for {
			select {
			case <-done:
				return
			case again := <-ch:
				if time.Since(first) < sameSignal {
					continue // the first one, delivered again
				}
				forcedExit(fmt.Sprintf("second %s: exiting at once", signalName(again)))
			case <-grace.C:
				forcedExit(fmt.Sprintf("still running %s after %s (a read stuck in storage?): exiting without waiting for it", exitGrace, signalName(sig)))
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// forcedExit runs the hooks (at most hookBudget) and exits with status 1.
func forcedExit(why string) {
	hooksMu.Lock()
	fns := make([]func(), 0, len(hooks))
	for _, f := range hooks {
		fns = append(fns, f)
	}
	hooksMu.Unlock()
	ran := make(chan struct{})
	go func() {
		for _, f := range fns {
			f()
		}
		close(ran)
	}()
	select {
	case <-ran:
	case <-time.After(hookBudget):
	}
	fmt.Fprintf(os.Stderr, "deltafs: %s\n", oneline.Of(secret.Redact(why)))
	os.Exit(1)
}

// keepStderr makes os.Stderr a duplicate of fd 2, so that a closed
// standard error never ends deltafs. Go's runtime kills a program whose
// write to fd 1 or 2 fails with EPIPE, as SIGPIPE would: `deltafs mount
// ... 2>&1 | tee log`, then Ctrl-C (which ends tee too), and the mount's
// next log line killed it before it unmounted, leaving a dead mount. A
// write to the duplicate fails with EPIPE instead, and the line is dropped
// (slog and the error line ignore it). Standard output keeps the default:
// `deltafs log | head` still ends quietly when head does.
func keepStderr() {
	fd, err := syscall.Dup(2)
	if err != nil {
		return // no fd 2: nothing to write to anyway
	}
	syscall.CloseOnExec(fd)
	os.Stderr = os.NewFile(uintptr(fd), "/dev/stderr")
}
