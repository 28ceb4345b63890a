package azstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

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

// setPin records key's identity, or fails with ErrChanged when a different
// one is pinned already. Mutable keys are not pinned.
func (s *Store) setPin(op, key string, p pin) error {
	if why := remote.PinETag(&s.pins, key, p, s.opts.Mutable(key)); why != "" {
		return errChanged(s, op, key, why)
	}
	return nil
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
		SetPin: func(op string, p pin) error { return s.setPin(op, key, p) },
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
	for attempt := 1; ; attempt++ {
		res, err, retryable := s.getOnce(policy.WithRetryOptions(octx, noRetry), bc, key, o, off, dst, p)
		if err == nil {
			s.st.CountRetries(int(st.Attempts.Load()))
			return res, nil
		}
		n := int(st.Attempts.Load())
		if !retryable || attempt >= s.opts.MaxAttempts || octx.Err() != nil {
			s.st.CountRetries(n)
			if errors.Is(err, errInvalidRange) && p == nil {
				return res, err
			}
			return res, s.classify(ctx, "GetBlob", key, err, n)
		}
		var be *remote.BodyError
		if errors.As(err, &be) {
			st.SetCause(s.redact(describe(err)))
		}
		if serr := s.health.Sleep(octx, s.backoff(attempt, err)); serr != nil {
			s.st.CountRetries(n)
			return res, s.classify(ctx, "GetBlob", key, serr, n)
		}
	}
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
	out, err := bc.DownloadStream(ctx, o)
	if err != nil {
		status, code := respError(err)
		switch {
		case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
			if p != nil {
				return res, errChanged(s, "GetBlob", key, fmt.Sprintf("range at %d of a %d-byte blob refused", off, p.Size)), false
			}
			return res, fmt.Errorf("%w: %w", errInvalidRange, err), false
		case status == http.StatusPreconditionFailed || code == "ConditionNotMet":
			return res, errChanged(s, "GetBlob", key, "If-Match on the pinned ETag failed"), false
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
	if p != nil && p.ETag != "" && res.etag != "" && res.etag != p.ETag {
		return res, errChanged(s, "GetBlob", key, fmt.Sprintf("pinned ETag %q, got %q", p.ETag, res.etag)), false
	}
	var want int64
	if cr := deref(out.ContentRange); cr != "" {
		start, end, total, ok := parseContentRange(cr)
		if !ok || start != off || end < start {
			return res, fmt.Errorf("unexpected Content-Range %q for bytes %d-%d", cr, off, off+int64(len(dst))-1), true
		}
		res.total = total
		want = end - start + 1
		if exp := min(int64(len(dst)), total-off); want != exp {
			return res, fmt.Errorf("Content-Range %q: expected %d bytes", cr, exp), true
		}
		if cl := out.ContentLength; cl != nil && *cl != want {
			return res, fmt.Errorf("Content-Length %d disagrees with Content-Range %q", *cl, cr), true
		}
	} else {
		// 200 with the whole blob: the service ignored the range.
		if out.ContentLength == nil || *out.ContentLength < 0 {
			return res, errors.New("full response without Content-Length"), true
		}
		res.total = *out.ContentLength
		if off >= res.total {
			return res, fmt.Errorf("%w: offset %d, blob %d bytes", errInvalidRange, off, res.total), false
		}
		if n, err := io.CopyN(io.Discard, out.Body, off); err != nil {
			s.st.Bytes.Add(n)
			return res, &remote.BodyError{Want: off, Got: n, Err: err}, !isCanceled(ctx, err)
		}
		s.st.Bytes.Add(off)
		want = min(int64(len(dst)), res.total-off)
	}
	if p != nil && res.total != p.Size {
		return res, errChanged(s, "GetBlob", key, fmt.Sprintf("pinned %d bytes, now %d", p.Size, res.total)), false
	}
	if p != nil && want != int64(len(dst)) {
		return res, errChanged(s, "GetBlob", key, "short range"), false
	}
	n, err := io.ReadFull(out.Body, dst[:want])
	s.st.Bytes.Add(int64(n))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return res, &remote.BodyError{Want: want, Got: int64(n), Err: err}, !isCanceled(ctx, err)
	}
	res.n = n
	return res, nil, false
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// parseContentRange parses "bytes start-end/total".
func parseContentRange(s string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	total, err3 = strconv.ParseInt(tot, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || start < 0 || end >= total {
		return 0, 0, 0, false
	}
	return start, end, total, true
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
	out, coalesced, err := storage.ReadCoalesced(ctx, s.loc, key, ranges,
		storage.Coalescing{Gap: s.opts.CoalesceGap, Max: s.opts.MaxCoalesce},
		func(requests int) error {
			if _, ok := s.pins.Get(key); !ok && requests > 1 && !s.opts.Mutable(key) {
				_, err := s.Stat(ctx, key)
				return err
			}
			return nil
		},
		func(ctx context.Context, off int64, buf []byte) (int, error) { return s.ReadAt(ctx, key, buf, off) })
	s.st.Coalesced.Add(int64(coalesced))
	return out, err
}
