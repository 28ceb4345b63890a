package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"net"
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
//   - a missing name (sample.ErrNotExist, snapshot.ErrVersionNotFound) →
//     ENOENT
//   - an errno that deltafs produces on purpose for op (the deliberate
//     list) → that errno
//   - everything else → EIO, with one log line naming the operation, the
//     version and file (path) and the cause: a vacuumed data file, a
//     corrupt page, a row of the wrong size, a storage read that timed out
//     or failed after its retries (even when the error wraps
//     context.DeadlineExceeded: only the request's own context makes
//     EINTR), an unreachable S3 endpoint. Whatever errno such an error
//     carries inside (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE from the
//     network; ENOENT, ENOSPC from the disk cache) never reaches the
//     kernel: a loader would take ENOENT for a missing sample, or an
//     unexpected errno for something else than a failed read.
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
	if errors.Is(err, sample.ErrNotExist) || errors.Is(err, snapshot.ErrVersionNotFound) {
		return syscall.ENOENT
	}
	if e, ok := deliberateErrno(op, err); ok {
		return e
	}
	msg := "I/O error"
	var ne net.Error
	switch {
	case errors.Is(err, storage.ErrNotExist):
		msg = "I/O error: a data file is missing (vacuumed?)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		msg = "I/O error: storage timed out"
	case errors.Is(err, context.Canceled):
		msg = "I/O error: storage read cancelled"
	}
	log.Error(msg, "op", op, "path", path, "err", err)
	return syscall.EIO
}

// deliberate lists, by operation, the errnos that deltafs produces on
// purpose below this package and that reach errnoFor inside an error. They
// pass through; any other errno inside an error is an I/O failure (EIO).
// Errnos the fs package returns itself (EROFS, ENOSYS, ENODATA for an
// unknown attribute, ERANGE) never pass through errnoFor.
// TestDeliberateErrnosListed checks that every errno wrapped into an error
// below fs is listed here.
var deliberate = map[string][]syscall.Errno{
	// materialize.Source.Xattr: a sample the disk cache cannot keep has no
	// extent, so getxattr says "no such attribute" and a loader reads the
	// file instead.
	"getxattr": {syscall.ENODATA},
}

// deliberateErrno finds a deliberate errno of op in err.
func deliberateErrno(op string, err error) (syscall.Errno, bool) {
	for _, e := range deliberate[op] {
		if errors.Is(err, e) {
			return e, true
		}
	}
	return 0, false
}

// toErrno is errnoFor without the request's context, for callers that
// have none: a context error is taken for an interrupted request.
func toErrno(log *slog.Logger, op, path string, err error) syscall.Errno {
	return errnoFor(nil, log, op, path, err)
}
