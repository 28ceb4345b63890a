package azstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// pin is the identity of a blob as first seen.
type pin = remote.Pin

func normETag(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return remote.NormETag(string(*e))
}

// Stat implements storage.Storage with Get Blob Properties. The first Stat
// or read of a key pins its identity; a pinned key is answered from the
// pin without a request.
func (s *Store) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	return s.pinned(key).Stat(ctx)
}

func (s *Store) props(ctx context.Context, key string) (pin, error) {
	if err := remote.CheckKey("azure", key); err != nil {
		return pin{}, err
	}
	octx, st, done := s.withOp(ctx, "GetProperties", key)
	defer done()
	out, err := s.client.NewBlobClient(s.fullKey(key)).GetProperties(octx, nil)
	n := int(st.Attempts.Load())
	s.st.CountRetries(n)
	if err != nil {
		return pin{}, s.classify(ctx, "GetProperties", key, err, n)
	}
	p := pin{ETag: normETag(out.ETag)}
	if out.ContentLength != nil {
		p.Size = *out.ContentLength
	}
	if out.LastModified != nil {
		p.Mod = *out.LastModified
	}
	return p, nil
}

// ReadAt implements storage.Storage with one ranged Get Blob. The first
// read of an unpinned key pins the identity in its response; later reads
// send If-Match with the pinned ETag and check size and ETag of every
// response, failing with storage.ErrChanged on a mismatch.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s/%s: negative offset %d", s.loc, key, off)
	}
	if err := remote.CheckKey("azure", key); err != nil {
		return 0, err
	}
	return remote.ReadPinned(ctx, s.pinned(key), p, off)
}

// pinned is what remote.ReadPinned and remote.Pinned.Holds ask of the
// store for key.
func (s *Store) pinned(key string) remote.Pinned {
	return remote.Pinned{
		Pins: &s.pins, Key: key, Mutable: s.opts.Mutable(key),
		Get: func(ctx context.Context, off int64, dst []byte, p *pin) (int, pin, error) {
			res, err := s.get(ctx, key, off, dst, p)
			return res.n, pin{Size: res.total, ETag: res.etag, Mod: res.mod}, err
		},
		Meta:   func(ctx context.Context) (pin, error) { return s.props(ctx, key) },
		MetaOp: "GetProperties", GetOp: "GetBlob",
		Changed: func(op, why string) error { return errChanged(s, op, key, why) },
		Refused: func(off, size int64, _ error) error {
			return &Error{Location: s.loc, Op: "GetBlob", Key: key, Reason: fmt.Sprintf("range at %d refused although the blob has %d bytes", off, size)}
		},
	}
}

// errInvalidRange marks a 416 answer: the range starts at or after the end.
var errInvalidRange = remote.ErrInvalidRange

type getResult struct {
	n     int   // bytes read into dst
	total int64 // blob size
	etag  string
	mod   time.Time
}

// noRetry makes the SDK send a request once: get retries itself, since a
// GET can also fail while its body is read, after the SDK has returned,
// and both kinds of failure share one attempt budget.
var noRetry = policy.RetryOptions{MaxRetries: -1}

// get reads bytes [off, off+len(dst)) of key into dst, retrying
// throttling, server errors, network errors, timeouts and short or broken
// bodies up to MaxAttempts attempts in all. With p it sends If-Match and
// requires the response to match the pin and fill dst; without, the blob
// may end before dst is full (res.n < len(dst)).
func (s *Store) get(ctx context.Context, key string, off int64, dst []byte, p *pin) (getResult, error) {
	o := &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: off, Count: int64(len(dst))}}
	if p != nil && p.ETag != "" {
		etag := azcore.ETag(`"` + p.ETag + `"`)
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
	}
	bc := s.client.NewBlobClient(s.fullKey(key))
	octx, st, done := s.withOp(ctx, "GetBlob", key)
	defer done()
	var res getResult
	err := st.Retry(octx, remote.Retrying{
		Counters: &s.st, MaxAttempts: s.opts.MaxAttempts,
		Describe: func(err error) string { return secret.Redact(describe(err)) },
		Wait: func(ctx context.Context, attempt int, err error) error {
			return s.health.Sleep(ctx, s.backoff(attempt, err))
		},
		Final: func(err error, attempts int) error {
			if errors.Is(err, errInvalidRange) && p == nil {
				return err
			}
			return s.classify(ctx, "GetBlob", key, err, attempts)
		},
	}, func() (err error, retryable bool) {
		res, err, retryable = s.getOnce(policy.WithRetryOptions(octx, noRetry), bc, key, o, off, dst, p)
		return err, retryable
	})
	return res, err
}

// backoff is the delay before attempt+1: the SDK's formula, so that GETs
// and the SDK's own retries back off alike, and Retry-After when the
// service sent one (up to MaxBackoff).
func (s *Store) backoff(attempt int, err error) time.Duration {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		if sec, perr := strconv.Atoi(re.RawResponse.Header.Get("Retry-After")); perr == nil && sec >= 0 {
			return min(time.Duration(sec)*time.Second, s.opts.MaxBackoff)
		}
	}
	d := s.opts.RetryDelay * time.Duration((1<<min(attempt, 20))-1)
	d = min(d, s.opts.MaxBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// getOnce is one attempt of get.
func (s *Store) getOnce(ctx context.Context, bc *blob.Client, key string, o *blob.DownloadStreamOptions, off int64, dst []byte, p *pin) (res getResult, err error, retryable bool) {
	g := remote.RangedGet{
		Off: off, Dst: dst, Pin: p, Noun: "blob", Bytes: &s.st.Bytes,
		Changed:  func(why string) error { return errChanged(s, "GetBlob", key, why) },
		Canceled: func(err error) bool { return isCanceled(ctx, err) },
	}
	out, err := bc.DownloadStream(ctx, o)
	if err != nil {
		status, code := respError(err)
		switch {
		case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
			return res, g.Refused(err), false
		case status == http.StatusPreconditionFailed || code == "ConditionNotMet":
			return res, g.PreconditionFailed(), false
		case status != 0:
			return res, err, retryableStatus(status)
		}
		return res, err, !isCanceled(ctx, err) && !isVended(err)
	}
	defer out.Body.Close()
	res.etag = normETag(out.ETag)
	if out.LastModified != nil {
		res.mod = *out.LastModified
	}
	var contentRange string
	if out.ContentRange != nil {
		contentRange = *out.ContentRange
	}
	res.n, res.total, err, retryable = g.Read(remote.RangeAnswer{
		ETag: res.etag, ContentRange: contentRange, ContentLength: out.ContentLength, Body: out.Body,
	})
	return res, err, retryable
}

// ReadRanges implements storage.RangeReader: neighbouring ranges are
// merged into one GET (storage.ReadCoalesced with Options.CoalesceGap and
// MaxCoalesce) and the GETs run in parallel, each retried like ReadAt. An
// unpinned key read with more than one GET is pinned first, so that every
// GET sends If-Match.
func (s *Store) ReadRanges(ctx context.Context, key string, ranges []storage.Range) ([][]byte, error) {
	if err := remote.CheckKey("azure", key); err != nil {
		return nil, err
	}
	return s.pinned(key).ReadRanges(ctx, s.loc, ranges, storage.Coalescing{Gap: s.opts.CoalesceGap, Max: s.opts.MaxCoalesce}, &s.st)
}
