package writer

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/deltafs/deltafs/storage"
)

// AbortError is the error of a Write that failed (or was interrupted)
// after it had started writing: what it left behind. Its message is the
// cause's; a command adds the rest in its own words.
type AbortError struct {
	Err error
	// Orphans are the data files the write stored, which no commit names:
	// Delta readers ignore them and VACUUM removes them.
	Orphans []string
	// MaybeCommitted is the version whose commit was being stored when
	// the write failed in a way that does not tell whether it landed (the
	// store did not answer, and could not be asked again); -1 otherwise,
	// when nothing was committed.
	MaybeCommitted int64
}

func (e *AbortError) Error() string { return e.Err.Error() }
func (e *AbortError) Unwrap() error { return e.Err }

// landedCheck bounds the look at a commit whose put failed.
const landedCheck = 5 * time.Second

// landed asks whether the commit data under key is stored after all, when
// its put failed: a put interrupted (ctx done) or cut off may have landed.
// known is false when the store cannot tell now.
func landed(ctx context.Context, st storage.Storage, key string, data []byte) (ok, known bool) {
	// ctx may be done (an interrupted write): the question is still
	// worth a brief, bounded look.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), landedCheck)
	defer cancel()
	got, err := storage.ReadAll(cctx, st, key)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return false, true
	case err != nil:
		return false, false
	}
	return bytes.Equal(got, data), true
}
