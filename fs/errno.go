package fs

import (
	"context"
	"errors"
	"log/slog"
	"syscall"

	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
)

// errnoFor is the one place where errors become errno values:
//
//   - nil → 0
//   - a request the kernel interrupted (ctx, the FUSE request's context,
//     is done) → EINTR, whatever the error
//   - sample.ErrNotExist and snapshot.ErrVersionNotFound → ENOENT; plain
//     syscall errnos as they are
//   - everything else → EIO, with a log line saying what failed (a
//     vacuumed data file, a corrupt page, a row of the wrong size, a
//     storage read that timed out or failed after its retries — even when
//     the error wraps context.DeadlineExceeded: only the request's own
//     context makes EINTR)
//
// op names what was being done and path the node, for the log line.
func errnoFor(ctx context.Context, log *slog.Logger, op, path string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if ctx != nil && ctx.Err() != nil {
		return syscall.EINTR
	}
	if ctx == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return syscall.EINTR // no request context to ask: taken for an interrupt
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, sample.ErrNotExist), errors.Is(err, snapshot.ErrVersionNotFound):
		return syscall.ENOENT
	case errors.As(err, &errno):
		return errno
	}
	msg := "I/O error"
	switch {
	case errors.Is(err, storage.ErrNotExist):
		msg = "I/O error: a data file is missing (vacuumed?)"
	case errors.Is(err, context.DeadlineExceeded):
		msg = "I/O error: storage timed out"
	case errors.Is(err, context.Canceled):
		msg = "I/O error: storage read cancelled"
	}
	log.Error(msg, "op", op, "path", path, "err", err)
	return syscall.EIO
}

// toErrno is errnoFor without the request's context, for callers that
// have none: a context error is taken for an interrupted request.
func toErrno(log *slog.Logger, op, path string, err error) syscall.Errno {
	return errnoFor(nil, log, op, path, err)
}
