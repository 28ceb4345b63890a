package testkit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// mainEnv marks a test binary started by RunMain: it is the command, not
// the tests.
const mainEnv = "DELTAFS_TESTKIT_MAIN"

// MainTimeout bounds a RunMain process: far above what any command of the
// tests takes on a loaded machine, so that only a hang reaches it.
const MainTimeout = 5 * time.Minute

// MainProcess is the TestMain of a command's test package (package main):
// in a process started by RunMain it runs main as the command name with the
// process's arguments and exits 0 when main returns (main exits by itself
// on an error); in any other process it runs the tests (m: a *testing.M,
// or a wrapper such as mounttest.Tests that cleans up after them).
func MainProcess(m interface{ Run() int }, name string, main func()) {
	if os.Getenv(mainEnv) != "1" {
		os.Exit(m.Run())
	}
	os.Args = append([]string{name}, os.Args[1:]...)
	main()
	os.Exit(0)
}

// RunMain runs the command (the test binary, see MainProcess) with args
// and, after the test's own environment, the NAME=VALUE entries of env, as
// a separate process: a real run, exit status included, without building
// a binary. The test fails when the process cannot be started or runs
// longer than MainTimeout (it is killed then).
func RunMain(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), MainTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not end within %v:\n%s%s", args, MainTimeout, o.String(), e.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	return o.String(), e.String(), code
}
