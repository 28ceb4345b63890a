package s3store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// Error is a failed S3 operation (see remote.Error); errors.As reaches the
// SDK's error (smithy.APIError and friends).
type Error = remote.Error

// describe is a short form of an SDK error: the HTTP status and the S3
// error code and message when there is one.
func describe(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg := ae.ErrorCode()
		if st := httpStatus(err); st != 0 {
			msg = fmt.Sprintf("HTTP %d %s", st, msg)
		}
		if m := ae.ErrorMessage(); m != "" && m != ae.ErrorCode() {
			msg += ": " + m
		}
		return msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error() // without the URL and the SDK's attempt count of 1
	}
	return err.Error()
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func responseHeader(err error, name string) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get(name)
	}
	return ""
}

// Reasons, in words.
const (
	reasonNotExist      = "object does not exist"
	reasonDenied        = "access denied (check credentials and the bucket policy; without s3:ListBucket a missing object also reads as denied)"
	reasonNoCredentials = "no usable AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or use an instance or web-identity role; --s3-anonymous for public buckets)"
	reasonChanged       = "object changed since it was first read (its size or ETag differs); refusing to mix two versions"
	reasonExists        = "object already exists"
	reasonIgnoresINM    = "s3 store ignores If-None-Match; concurrent commits would be unsafe"
)

func isCanceled(ctx context.Context, err error) bool {
	var ce *smithy.CanceledError
	return errors.As(err, &ce) || errors.Is(err, context.Canceled) ||
		(ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// classify turns the final error of an operation into an *Error.
func (s *Store) classify(ctx context.Context, op, key string, err error, attempts int) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	e = &Error{Location: s.loc, Op: op, Key: key, Attempts: attempts, Err: err}
	quiet := false // the message says it all: no cause in words
	code, status := errorCode(err), httpStatus(err)
	var se *v4.SigningError
	var ue *remote.Unreachable
	var ve vendedError
	switch {
	case errors.As(err, &ve):
		// The catalog's word (revoked, expired and not renewed) says it
		// all; the SDK's wrapping would only repeat it.
		e.Op, e.Reason, e.Attempts, e.Wide, quiet = "", ve.Error(), 0, true, true
		e.Permanent = true
	case errors.As(err, &ue):
		// The message says it all: the endpoint, since when, why, and
		// that it is being probed. Not Permanent: it passes when the
		// endpoint answers again.
		e.Op, e.Reason, e.Attempts, e.Wide, quiet = "", ue.Error(), 0, true, true
		e.Err = ue
	case s.life.Err() != nil && ctx.Err() == nil:
		e.Reason = "request abandoned: the store was closed"
		e.Permanent, quiet, e.Err = true, true, nil
	case isCanceled(ctx, err):
		e.Reason = "canceled"
		e.Permanent, quiet = true, true
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.Reason = ctxErr.Error()
			e.Kind = ctxErr
		}
	case errors.As(err, &se):
		e.Reason, e.Permanent, e.Wide = reasonNoCredentials, true, true
	case code == "NoSuchKey" || (code == "NotFound" && op != "ListObjectsV2") || (status == http.StatusNotFound && code == ""):
		e.Reason, e.Kind, e.Permanent = reasonNotExist, storage.ErrNotExist, true
	case code == "NoSuchBucket":
		e.Reason = fmt.Sprintf("bucket %s does not exist", s.bucket)
		e.Kind, e.Permanent, e.Wide = storage.ErrNotExist, true, true
	case code == "InvalidAccessKeyId":
		e.Reason = "invalid credentials: the server does not know the access key id (check credentials)"
		e.Permanent, e.Wide = true, true
	case code == "SignatureDoesNotMatch":
		e.Reason = "invalid credentials: the request signature does not match (check the secret access key)"
		e.Permanent, e.Wide = true, true
	case code == "ExpiredToken" || code == "TokenRefreshRequired" || code == "InvalidToken" || code == "RequestExpired":
		e.Reason = "credentials expired or invalid session token (refresh the credentials)"
		e.Permanent, e.Wide = true, true
	case code == "AccessDenied" || code == "AllAccessDisabled" || code == "AccountProblem" ||
		code == "Forbidden" || status == http.StatusForbidden:
		e.Reason, e.Permanent, e.Wide = reasonDenied, true, true
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || code == "IllegalLocationConstraintException" || status == http.StatusMovedPermanently:
		e.Reason = "the bucket is in another region; set --s3-region (or AWS_REGION)"
		if r := responseHeader(err, "x-amz-bucket-region"); r != "" {
			e.Reason = fmt.Sprintf("bucket %s is in region %s; set --s3-region %s (or AWS_REGION)", s.bucket, r, r)
		}
		e.Permanent, e.Wide = true, true
	case code == "SlowDown" || status == http.StatusTooManyRequests || code == "Throttling" || code == "ThrottlingException" || code == "RequestLimitExceeded":
		e.Reason = "the server is throttling requests; gave up"
		if attempts > 1 {
			e.Reason = fmt.Sprintf("the server is throttling requests; gave up after %d attempts", attempts)
		}
	case status >= 500:
		e.Reason = fmt.Sprintf("server error; gave up after %d attempts", attempts)
	case status >= 400:
		e.Reason = "request refused"
		e.Permanent = !s.retryer.IsErrorRetryable(err)
	default:
		var ne net.Error
		msg := err.Error()
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			e.Reason = fmt.Sprintf("request timed out (limit %v per attempt)", s.opts.RequestTimeout)
			// The per-attempt timeout is the store's, not the caller's:
			// the error must not read as the caller's context expiring
			// (errors.Is(err, context.DeadlineExceeded)), which upper
			// layers take for an interrupted request.
			e.Err = remote.Timeout{Msg: describe(err)}
		case strings.Contains(msg, "connection refused"):
			e.Reason = "cannot connect to the S3 endpoint (connection refused)"
			e.Wide = true // the endpoint's problem, not the key's
		default:
			e.Reason = remote.IOReason(err)
		}
		if attempts > 1 {
			e.Reason += fmt.Sprintf("; gave up after %d attempts", attempts)
		}
	}
	if !quiet && e.Err != nil {
		e.Detail = describe(e.Err)
	}
	return e
}

func errChanged(s *Store, op, key, detail string) *Error {
	r := reasonChanged
	if detail != "" {
		r += ": " + detail
	}
	return &Error{Location: s.loc, Op: op, Key: key, Reason: r, Kind: storage.ErrChanged, Permanent: true}
}
