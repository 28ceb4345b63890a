package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// pin is the identity of an object as first seen.
type pin = remote.Pin

func normETag(s string) string { return remote.NormETag(s) }

// Stat implements storage.Storage. The first Stat or read of a key pins its
// identity; a pinned key is answered from the pin without a request.
func (s *Store) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	return s.pinned(key).Stat(ctx)
}

func (s *Store) head(ctx context.Context, key string) (pin, error) {
	if err := remote.CheckKey("s3", key); err != nil {
		return pin{}, err
	}
	octx, st, done := s.withOp(ctx, "HeadObject", key)
	defer done()
	out, err := s.client.HeadObject(octx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	n := int(st.Attempts.Load())
	s.st.CountRetries(n)
	if err != nil {
		return pin{}, s.classify(ctx, "HeadObject", key, err, n)
	}
	raw := aws.ToString(out.ETag)
	return pin{Size: aws.ToInt64(out.ContentLength), ETag: normETag(raw), RawETag: raw, Mod: aws.ToTime(out.LastModified)}, nil
}

// ReadAt implements storage.Storage with one ranged GET (bytes=off-end).
// The first read of an unpinned key pins the identity in its response;
// later reads send If-Match with the pinned ETag and check size and ETag of
// every response, failing with storage.ErrChanged on a mismatch.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s/%s: negative offset %d", s.loc, key, off)
	}
	if err := remote.CheckKey("s3", key); err != nil {
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
			return res.n, pin{Size: res.total, ETag: normETag(res.rawETag), RawETag: res.rawETag, Mod: res.mod}, err
		},
		Meta:   func(ctx context.Context) (pin, error) { return s.head(ctx, key) },
		MetaOp: "HeadObject", GetOp: "GetObject",
		Changed: func(op, why string) error { return errChanged(s, op, key, why) },
		Refused: func(off, size int64, err error) error {
			return &Error{Location: s.loc, Op: "GetObject", Key: key, Reason: fmt.Sprintf("range at %d refused although the object has %d bytes", off, size), Err: err, Detail: describe(err)}
		},
	}
}

// errInvalidRange marks a 416 answer: the range starts at or after the end.
var errInvalidRange = remote.ErrInvalidRange

type getResult struct {
	n       int   // bytes read into dst
	total   int64 // object size
	rawETag string
	mod     time.Time
}

// get reads bytes [off, off+len(dst)) of key into dst, retrying throttling,
// server errors, network errors, timeouts and short or broken bodies up to
// MaxAttempts attempts in all. With p it sends If-Match and requires the
// response to match the pin and fill dst; without, the object may end
// before dst is full (res.n < len(dst)).
//
// The SDK's own retry loop is off for GETs because it ends when the
// headers arrive: a body cut short is only seen here, and must count
// against the same attempt budget.
func (s *Store) get(ctx context.Context, key string, off int64, dst []byte, p *pin) (getResult, error) {
	in := &s3.GetObjectInput{
		Bucket: &s.bucket,
		Key:    aws.String(s.fullKey(key)),
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1)),
	}
	if p != nil && p.RawETag != "" {
		in.IfMatch = aws.String(p.RawETag)
	}
	octx, st, done := s.withOp(ctx, "GetObject", key)
	defer done()
	var res getResult
	err := st.Retry(octx, remote.Retrying{
		Counters: &s.st, MaxAttempts: s.opts.MaxAttempts,
		Describe: describe, // the next attempt's log line says why (httpClient.Do)
		Wait:     s.sleep,
		Final: func(err error, attempts int) error {
			if errors.Is(err, errInvalidRange) && p == nil {
				return err
			}
			return s.classify(ctx, "GetObject", key, err, attempts)
		},
	}, func() (err error, retryable bool) {
		res, err, retryable = s.getOnce(octx, key, in, off, dst, p)
		return err, retryable
	})
	return res, err
}

// noSDKRetry makes the SDK send a request once; get retries itself.
func noSDKRetry(o *s3.Options) { o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1) }

// sleep waits the retryer's jittered exponential delay before attempt+1,
// or fails at once when the endpoint is or goes down meanwhile.
func (s *Store) sleep(ctx context.Context, attempt int, err error) error {
	if herr := s.health.Check(); herr != nil {
		return herr
	}
	d, derr := s.retryer.RetryDelay(attempt, err)
	if derr != nil {
		d = s.opts.MaxBackoff
	}
	return s.health.Sleep(ctx, d)
}

// getOnce is one attempt of get.
func (s *Store) getOnce(ctx context.Context, key string, in *s3.GetObjectInput, off int64, dst []byte, p *pin) (res getResult, err error, retryable bool) {
	g := remote.RangedGet{
		Off: off, Dst: dst, Pin: p, Noun: "object", Bytes: &s.st.Bytes,
		Changed:  func(why string) error { return errChanged(s, "GetObject", key, why) },
		Canceled: func(err error) bool { return isCanceled(ctx, err) },
	}
	out, err := s.client.GetObject(ctx, in, noSDKRetry)
	if err != nil {
		switch code, status := errorCode(err), httpStatus(err); {
		case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
			return res, g.Refused(err), false
		case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
			return res, g.PreconditionFailed(), false
		}
		return res, err, !isCanceled(ctx, err) && s.retryer.IsErrorRetryable(err)
	}
	defer out.Body.Close()
	res.rawETag = aws.ToString(out.ETag)
	res.mod = aws.ToTime(out.LastModified)
	res.n, res.total, err, retryable = g.Read(remote.RangeAnswer{
		ETag: normETag(res.rawETag), ContentRange: aws.ToString(out.ContentRange),
		ContentLength: out.ContentLength, Body: out.Body,
	})
	return res, err, retryable
}

// Range is a byte range of an object: Len bytes at Off (storage.Range, so
// that Store is a storage.RangeReader).
type Range = storage.Range

// ReadRanges reads several ranges of one object and returns their bytes in
// the order given. Ranges may be unsorted and may overlap.
//
// Neighbouring ranges are coalesced: sorted by offset, a range joins the
// GET of the previous ones when the gap between them is at most
// Options.CoalesceGap (64 KiB by default) and the merged GET stays within
// Options.MaxCoalesce (16 MiB); the bytes of the gap are fetched and
// dropped, which costs less than another round trip. The merged GETs run
// in parallel (within the store's MaxConcurrency), each retried like
// ReadAt. The returned slices may share a backing array (capacity is
// clipped, so appending to one never overwrites another).
//
// Every range must lie within the object: one that runs past the end
// fails the call with an error wrapping io.ErrUnexpectedEOF. Like ReadAt,
// the object's identity is pinned (an unpinned key with more than one
// merged GET is pinned with a HEAD first) and a change is
// storage.ErrChanged.
func (s *Store) ReadRanges(ctx context.Context, key string, ranges []Range) ([][]byte, error) {
	if err := remote.CheckKey("s3", key); err != nil {
		return nil, err
	}
	return s.pinned(key).ReadRanges(ctx, s.loc, ranges, storage.Coalescing{Gap: s.opts.CoalesceGap, Max: s.opts.MaxCoalesce}, &s.st)
}

var _ storage.RangeReader = (*Store)(nil)
