package s3store

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// ProbePrefix is where the conditional-write probe puts (and deletes) its
// object: a name no Delta reader lists as part of the log.
const ProbePrefix = "_delta_log/.deltafs-probe-"

// Put implements storage.Storage with PutObject (a bytes.Reader body, so
// the SDK can sign and resend it). With ifAbsent it sends If-None-Match: *
// and a 412 PreconditionFailed wraps storage.ErrExist.
//
// Before the store's first conditional put it checks once that the server
// honours If-None-Match: it puts a probe object under ProbePrefix twice,
// both conditionally, and deletes it. If the second put succeeds too, the
// server ignores the condition and every conditional put of the store is
// refused ("s3 store ignores If-None-Match; concurrent commits would be
// unsafe"), since two writers could both think they committed a version.
//
// A conditional put whose earlier attempt may have reached the server (a
// reset after sending, then 412 on the retry) reads the object back: if it
// holds exactly data, the put is reported as done. 409
// ConditionalRequestConflict (a concurrent conditional write in progress)
// is retried. A put forgets key's pin.
func (s *Store) Put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if err := remote.CheckKey("s3", key); err != nil {
		return err
	}
	if ifAbsent {
		if err := s.checkConditionalWrites(ctx); err != nil {
			return err
		}
	}
	defer s.pins.Unpin(key)
	return s.put(ctx, key, data, ifAbsent)
}

func (s *Store) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	for try := 1; ; try++ {
		in := &s3.PutObjectInput{
			Bucket:        &s.bucket,
			Key:           aws.String(s.fullKey(key)),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
		}
		if ifAbsent {
			in.IfNoneMatch = aws.String("*")
		}
		octx, st, done := s.withOp(ctx, "PutObject", key)
		_, err := s.client.PutObject(octx, in)
		done()
		n := int(st.Attempts.Load())
		s.st.CountRetries(n)
		if err == nil {
			return nil
		}
		code, status := errorCode(err), httpStatus(err)
		if ifAbsent && (code == "PreconditionFailed" || status == http.StatusPreconditionFailed) {
			if n > 1 || try > 1 {
				if same, _ := s.pinned(key).Holds(ctx, data); same {
					return nil
				}
			}
			return &Error{Location: s.loc, Op: "PutObject", Key: key, Reason: reasonExists, Attempts: n, Err: err, Detail: describe(err), Kind: storage.ErrExist, Permanent: true}
		}
		if ifAbsent && (code == "ConditionalRequestConflict" || status == http.StatusConflict) && try < s.opts.MaxAttempts && ctx.Err() == nil {
			s.st.Retries.Add(1)
			s.health.Notice("s3: a conditional put met a concurrent one; retrying", "op", "PutObject", "key", key, "attempt", try+1, "cause", describe(err))
			if serr := s.sleep(ctx, try, err); serr != nil {
				return s.classify(ctx, "PutObject", key, serr, n)
			}
			continue
		}
		return s.classify(ctx, "PutObject", key, err, n)
	}
}

// checkConditionalWrites runs the If-None-Match probe once per store. A
// probe that fails for another reason (network, permissions) is not a
// verdict: its error is returned and the next conditional put probes again.
func (s *Store) checkConditionalWrites(ctx context.Context) error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probed {
		return s.probeErr
	}
	key := ProbePrefix + randomHex(8)
	if err := s.put(ctx, key, []byte("deltafs If-None-Match probe 1\n"), true); err != nil {
		return err
	}
	defer s.deleteProbe(key)
	err := s.put(ctx, key, []byte("deltafs If-None-Match probe 2\n"), true)
	switch {
	case errors.Is(err, storage.ErrExist):
		s.probed = true
		return nil
	case err == nil:
		s.probed = true
		s.probeErr = &Error{Location: s.loc, Op: "PutObject", Key: key, Reason: reasonIgnoresINM, Permanent: true, Wide: true}
		s.log.Warn("s3: the server ignores If-None-Match; conditional puts are refused", "location", s.loc)
		return s.probeErr
	default:
		return err
	}
}

func (s *Store) deleteProbe(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
	defer cancel()
	octx, st, done := s.withOp(ctx, "DeleteObject", key)
	defer done()
	_, err := s.client.DeleteObject(octx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.fullKey(key))})
	s.st.CountRetries(int(st.Attempts.Load()))
	if err != nil {
		s.log.Warn("s3: could not delete the conditional-write probe object; delete it by hand", "location", s.loc, "key", key, "err", describe(err))
	}
}
