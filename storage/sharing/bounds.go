package sharing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize"
)

// Bounds on what a server may make the client wait for or hold. A sharing
// server (or a file server behind its pre-signed URLs) that accepts a
// request and then says nothing, pauses for good in the middle of an
// answer, trickles it a byte at a time, or streams it without end must
// fail the request with one line, not hang it or fill the memory.

// DefaultTimeout is Options.Timeout's default (--sharing-timeout).
const DefaultTimeout = 60 * time.Second

// answerTimeouts is how many timeouts a whole API answer may take: a
// server that keeps sending, slowly, is cut off after that.
const answerTimeouts = 10

// maxResponse bounds a query's answer (a line per data file, about 1 to 2
// KiB with statistics: over half a million files). Its lines are kept in
// memory until the version is built, for up to parallelQueries versions
// at once.
const maxResponse = 1 << 30

// maxLine bounds one line of an answer.
const maxLine = 64 << 20

// maxVersions bounds the versions queried when a table is opened (one
// query each): of a share with more, the latest maxVersions are served,
// the first of them as a checkpoint (as a table whose older log was
// cleaned up), and a share that gains more than that many versions
// between two looks fails the look.
const maxVersions = 10000

// maxPages bounds the pages of a query's answer, for a server that
// paginates it without being asked to (deltafs sends no maxFiles).
const maxPages = 10000

// timeoutError is a request the server left waiting.
type timeoutError struct {
	d     time.Duration
	whole bool // the whole answer took too long (else: a pause)
}

func (e *timeoutError) Error() string {
	if e.whole {
		return fmt.Sprintf("the answer took longer than %v", e.d)
	}
	return fmt.Sprintf("the server sent nothing for %v", e.d)
}

// watchdog ends a request whose answer stalls: nothing for d (from the
// request to its headers, or between two reads of its body), or the
// whole answer not in within total.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration
	pause  *time.Timer
	whole  *time.Timer
}

func newWatchdog(parent context.Context, d, total time.Duration) *watchdog {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watchdog{ctx: ctx, cancel: cancel, d: d}
	w.pause = time.AfterFunc(d, func() { cancel(&timeoutError{d: d}) })
	w.whole = time.AfterFunc(total, func() { cancel(&timeoutError{d: total, whole: true}) })
	return w
}

// progress restarts the pause clock: bytes came.
func (w *watchdog) progress() { w.pause.Reset(w.d) }

// stop releases the watchdog and its request.
func (w *watchdog) stop() {
	w.pause.Stop()
	w.whole.Stop()
	w.cancel(nil)
}

// timedOut is the watchdog's own timeout, if it is what ended the request.
func (w *watchdog) timedOut() (*timeoutError, bool) {
	var te *timeoutError
	if w.ctx.Err() != nil && errors.As(context.Cause(w.ctx), &te) {
		return te, true
	}
	return nil, false
}

// watchedBody is an answer's body read under its watchdog: a read that
// the watchdog ended fails with the watchdog's reason.
type watchedBody struct {
	rc io.ReadCloser
	w  *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.progress()
	}
	if err != nil && err != io.EOF {
		if te, ok := b.w.timedOut(); ok {
			err = te
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.w.stop()
	return err
}

// tooLongError is an answer past maxResponse.
type tooLongError struct{ max int64 }

func (e *tooLongError) Error() string {
	return "the answer is longer than " + humanize.IBytes(uint64(e.max))
}

// boundedReader fails once more than max bytes were read.
type boundedReader struct {
	r    io.Reader
	max  int64
	read int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if left := b.max + 1 - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.max {
		return n, &tooLongError{b.max}
	}
	return n, err
}

// stickyReader keeps the first error other than io.EOF its reader gave.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}
