package fs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
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
