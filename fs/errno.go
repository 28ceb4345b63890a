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

// toErrno is the one place where errors become errno values:
//
//   - nil → 0
//   - a cancelled or timed-out request → EINTR
//   - sample.ErrNotExist and snapshot.ErrVersionNotFound → ENOENT; plain
//     syscall errnos as they are
//   - everything else → EIO, with a log line saying what failed (a
//     vacuumed data file, a corrupt page, a row of the wrong size)
//
// op names what was being done and path the node, for the log line.
func toErrno(log *slog.Logger, op, path string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return syscall.EINTR
	case errors.Is(err, sample.ErrNotExist), errors.Is(err, snapshot.ErrVersionNotFound):
		return syscall.ENOENT
	case errors.As(err, &errno):
		return errno
	}
	msg := "I/O error"
	if errors.Is(err, storage.ErrNotExist) {
		msg = "I/O error: a data file is missing (vacuumed?)"
	}
	log.Error(msg, "op", op, "path", path, "err", err)
	return syscall.EIO
}
