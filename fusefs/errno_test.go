package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
)

// TestErrnoForTimeouts: only the FUSE request's own context makes EINTR. A
// storage error that wraps context.DeadlineExceeded or context.Canceled
// (a per-attempt timeout after the retries, a fetch shared with another
// request) while the request is live is EIO with a log line naming the
// operation and the path.
func TestErrnoForTimeouts(t *testing.T) {
	live := context.Background()
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	timeout := fmt.Errorf("s3://b/t/part-0.parquet: request timed out; gave up after 5 attempts: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		want    syscall.Errno
		wantLog string
	}{
		{"storage timeout, request live", live, timeout, syscall.EIO, "storage timed out"},
		{"storage cancel, request live", live, fmt.Errorf("x: %w", context.Canceled), syscall.EIO, "cancelled"},
		{"request interrupted", interrupted, fmt.Errorf("x: %w", context.Canceled), syscall.EINTR, ""},
		{"request interrupted, other error", interrupted, fmt.Errorf("boom"), syscall.EINTR, ""},
		{"plain error", live, fmt.Errorf("boom"), syscall.EIO, "I/O error"},
		{"no request context, context error", nil, fmt.Errorf("x: %w", context.Canceled), syscall.EINTR, ""},
		{"no request context, plain error", nil, fmt.Errorf("boom"), syscall.EIO, "I/O error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			var got syscall.Errno
			if tc.ctx == nil {
				got = toErrno(log, "read", "version 3 shard 0/1 (10 samples) 7.png", tc.err)
			} else {
				got = errnoFor(tc.ctx, log, "read", "version 3 shard 0/1 (10 samples) 7.png", tc.err)
			}
			if got != tc.want {
				t.Fatalf("toErrno = %v, want %v", got, tc.want)
			}
			out := buf.String()
			if tc.wantLog == "" {
				if out != "" {
					t.Fatalf("logged %q for an interrupted request", out)
				}
				return
			}
			if strings.Count(out, "\n") != 1 || !strings.Contains(out, tc.wantLog) ||
				!strings.Contains(out, "version 3") || !strings.Contains(out, "7.png") || !strings.Contains(out, tc.err.Error()) {
				t.Fatalf("log %q: want one line with %q, the version, the file and the cause", out, tc.wantLog)
			}
		})
	}
}

// TestErrnoForHiddenErrnos: an errno inside an error reaches the kernel
// only when deltafs produced it on purpose for that operation (the
// deliberate list). The network's errnos under an S3 failure, and ENOENT
// or ENOSPC from the disk cache, are EIO with one log line naming the
// file, the version and the cause; missing names stay ENOENT.
func TestErrnoForHiddenErrnos(t *testing.T) {
	live := context.Background()
	const path = "version 3 shard 0/1 (10 samples) 7.png"
	netErr := func(op string, e syscall.Errno) error {
		return fmt.Errorf("version 3: data file part-0.parquet: s3://b/t/part-0.parquet: cannot connect (GetObject, %w)",
			&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError("connect", e)})
	}
	for _, tc := range []struct {
		name string
		op   string
		err  error
		want syscall.Errno
	}{
		{"connection refused", "read", netErr("dial", syscall.ECONNREFUSED), syscall.EIO},
		{"connection reset", "read", netErr("read", syscall.ECONNRESET), syscall.EIO},
		{"timed out", "read", netErr("read", syscall.ETIMEDOUT), syscall.EIO},
		{"broken pipe", "read", netErr("write", syscall.EPIPE), syscall.EIO},
		{"host unreachable", "lookup", netErr("dial", syscall.EHOSTUNREACH), syscall.EIO},
		{"disk cache file gone", "read", fmt.Errorf("version 3: cache entry: %w", &os.PathError{Op: "open", Path: "/c/x", Err: syscall.ENOENT}), syscall.EIO},
		{"disk cache full", "extents", fmt.Errorf("version 3: cache: %w", syscall.ENOSPC), syscall.EIO},
		{"read-only, not produced below fs", "read", fmt.Errorf("x: %w", syscall.EROFS), syscall.EIO},
		{"no extent: deliberate for getxattr", "getxattr", fmt.Errorf("%w: sample not kept", syscall.ENODATA), syscall.ENODATA},
		{"ENODATA outside getxattr", "read", fmt.Errorf("%w: sample not kept", syscall.ENODATA), syscall.EIO},
		{"missing sample", "lookup", fmt.Errorf("x: %w", sample.ErrNotExist), syscall.ENOENT},
		{"missing version", "lookup", fmt.Errorf("x: %w", snapshot.ErrVersionNotFound), syscall.ENOENT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			if got := errnoFor(live, log, tc.op, path, tc.err); got != tc.want {
				t.Fatalf("errnoFor = %v, want %v", got, tc.want)
			}
			if got := toErrno(log, tc.op, path, tc.err); got != tc.want {
				t.Fatalf("toErrno = %v, want %v", got, tc.want)
			}
			out := buf.String()
			if tc.want != syscall.EIO {
				if out != "" {
					t.Fatalf("logged %q for %v", out, tc.want)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 { // one per call
				t.Fatalf("log %q: want one line per call", out)
			}
			for _, l := range lines {
				if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "version 3") || !strings.Contains(l, "7.png") || !strings.Contains(l, tc.err.Error()) {
					t.Fatalf("log line %q does not name the version, the file and the cause", l)
				}
			}
		})
	}
}

// TestDeliberateErrnosListed: every errno that a package below fs wraps
// into an error (fmt.Errorf with syscall.E... or unix.E...) is on the
// deliberate list, so that adding a producer is a decision about what the
// kernel sees, not an accident; errnos not on the list become EIO.
func TestDeliberateErrnosListed(t *testing.T) {
	listed := map[string]bool{}
	for _, es := range deliberate {
		for _, e := range es {
			listed[unix.ErrnoName(e)] = true
		}
	}
	root := filepath.Join("..")
	found := 0
	err := filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "fs", "testdata", "bench", "examples", ".git", "cmd":
				// fs answers errnos itself; bench and cmd are not below fs.
				if p != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Errorf" {
				return true
			}
			for _, a := range call.Args {
				sel, ok := a.(*ast.SelectorExpr)
				if !ok {
					continue
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || (pkg.Name != "syscall" && pkg.Name != "unix") || !strings.HasPrefix(sel.Sel.Name, "E") {
					continue
				}
				found++
				if !listed[sel.Sel.Name] {
					t.Errorf("%s wraps %s.%s into an error, but it is not on fs's deliberate list: the kernel would see EIO", p, pkg.Name, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no producer found: the scan is broken (extents wraps ENODATA)")
	}
}
