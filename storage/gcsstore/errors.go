package gcsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	gcs "cloud.google.com/go/storage"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// Error is a failed GCS operation (see remote.Error); errors.As reaches
// the SDK's error.
type Error = remote.Error

// Reasons, in words.
const (
	reasonNotExist      = "object does not exist"
	reasonNoCredentials = "no usable Google credentials (set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, run `gcloud auth application-default login`, or run with a service account on Google Cloud; --gcs-anonymous for public buckets)"
	reasonBadToken      = "invalid credentials: the token endpoint refused them (check GOOGLE_APPLICATION_CREDENTIALS or the service account)"
	reasonNoToken       = "cannot get an access token (check GOOGLE_APPLICATION_CREDENTIALS, or the metadata server)"
	reasonUnauthorized  = "invalid credentials: the server refused the access token (check GOOGLE_APPLICATION_CREDENTIALS or the service account)"
	reasonDenied        = "access denied (check the credentials' roles on the bucket: reading needs storage.objects.get and storage.objects.list)"
	reasonChanged       = "object changed since it was first read (its generation or size differs); refusing to mix two versions"
	reasonExists        = "object already exists"
)

// describe is a short, one-line form of a cause: the HTTP status and the
// server's message for an API error, the token endpoint's error code for
// a refused token, the network error without the URL otherwise.
func describe(err error) string {
	var re *oauth2.RetrieveError
	var ge *googleapi.Error
	var ue *url.Error
	switch {
	case errors.As(err, &re):
		msg := "token endpoint"
		if re.Response != nil {
			msg += ": HTTP " + re.Response.Status
		}
		code, desc := re.ErrorCode, re.ErrorDescription
		if code == "" {
			// Some token sources (service-account keys) leave the
			// answer unparsed: its error fields, never a token.
			var body struct {
				Error            string `json:"error"`
				ErrorDescription string `json:"error_description"`
			}
			if json.Unmarshal(re.Body, &body) == nil {
				code, desc = body.Error, body.ErrorDescription
			}
		}
		if code != "" {
			msg += ": " + code
			if desc != "" {
				msg += ": " + desc
			}
		}
		return oneLineString(msg)
	case errors.As(err, &ge):
		msg := fmt.Sprintf("HTTP %d", ge.Code)
		if ge.Message != "" {
			msg += ": " + ge.Message
		}
		return oneLineString(msg)
	case errors.As(err, &ue):
		return oneLineString(ue.Err.Error()) // without the URL
	}
	return oneLineString(err.Error())
}

// oneLineString keeps the first line of s (bodies of error answers may run
// over several).
func oneLineString(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// oneLine is err cut to its first line.
func oneLine(err error) error { return errors.New(describe(err)) }

// httpCode is the HTTP status of an API error, or 0.
func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// tokenError explains a failure to get the first access token.
func (s *Store) tokenError(err error) error {
	e := &Error{Location: s.loc, Op: "credentials", Err: oneLine(err), Detail: describe(err), Wide: true, Permanent: true}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
		e.Reason = reasonBadToken
	} else {
		e.Reason = reasonNoToken
	}
	return e
}

func isCanceled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// classify turns the final error of an operation into an *Error.
func (s *Store) classify(ctx context.Context, op, key string, err error, attempts int) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	e = &Error{Location: s.loc, Op: op, Key: key, Attempts: attempts, Err: err}
	quiet := false // the message says it all: no cause in words
	code := httpCode(err)
	var ne net.Error
	var be *remote.BodyError
	var re *oauth2.RetrieveError
	var ce remote.Closed
	var ve vendedError
	var ue *remote.Unreachable
	if !errors.As(err, &ue) && code == 0 && ctx.Err() == nil && s.life.Err() == nil {
		// The http.Client's timeout flattens the error its transport
		// returned (the meter's *Unreachable among them) into a string:
		// while the endpoint is down, the health's word stands.
		if herr := s.health.Check(); herr != nil {
			errors.As(herr, &ue)
		}
	}
	switch {
	case errors.As(err, &ve):
		// The catalog's word (revoked, expired and not renewed) says it
		// all; the SDK's wrapping would only repeat it.
		e.Op, e.Reason, e.Attempts, e.Err = "", oneLineString(ve.Error()), 0, ve
		e.Permanent, e.Wide, quiet = true, true, true
	case ue != nil:
		// The message says it all: the endpoint, since when, why, and
		// that it is being probed. Not Permanent: it passes when the
		// endpoint answers again.
		e.Op, e.Reason, e.Attempts, e.Err = "", ue.Error(), 0, ue
		e.Wide, quiet = true, true
	case (s.life.Err() != nil || errors.As(err, &ce)) && ctx.Err() == nil:
		e.Reason = "request abandoned: the store was closed"
		e.Permanent, quiet, e.Err = true, true, nil
	case ctx.Err() != nil && isCanceled(ctx, err):
		e.Reason, e.Kind = ctx.Err().Error(), ctx.Err()
		e.Permanent, quiet = true, true
	case errors.Is(err, gcs.ErrBucketNotExist) || code == 404 && op == "put":
		// An upload creates its object: its 404 can only be the
		// bucket's (S3 and Azure name it so too).
		e.Reason = fmt.Sprintf("bucket %s does not exist", s.bucketName)
		e.Kind, e.Permanent, e.Wide, quiet = storage.ErrNotExist, true, true, true
	case errors.Is(err, gcs.ErrObjectNotExist) || (code == 404 && op != "list"):
		e.Reason, e.Kind, e.Permanent = reasonNotExist, storage.ErrNotExist, true
	case code == 404:
		e.Reason = fmt.Sprintf("bucket %s does not exist", s.bucketName)
		e.Kind, e.Permanent, e.Wide = storage.ErrNotExist, true, true
	case errors.As(err, &re):
		// The token expired and could not be renewed.
		e.Reason, e.Permanent, e.Wide, e.Err = reasonBadToken, true, true, oneLine(err)
		if re.Response == nil || re.Response.StatusCode >= 500 {
			e.Reason = reasonNoToken
		}
	case code == 401:
		e.Reason, e.Permanent, e.Wide = reasonUnauthorized, true, true
	case code == 403:
		e.Reason, e.Permanent, e.Wide = reasonDenied, true, true
	case code == 429:
		e.Reason = fmt.Sprintf("the server is throttling requests; gave up after %d attempts", attempts)
	case code >= 500:
		e.Reason = fmt.Sprintf("server error; gave up after %d attempts", attempts)
	case code >= 400:
		e.Reason, e.Permanent = "request refused", true
	default:
		msg := err.Error()
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
			e.Reason = fmt.Sprintf("cannot connect to the GCS endpoint %s (connection refused)", s.endpoint)
			e.Wide, quiet = true, true
		case errors.As(err, &be):
			e.Reason = "response body cut short"
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
			e.Reason = fmt.Sprintf("request timed out (limit %v per attempt)", s.opts.RequestTimeout)
			// Not the caller's context expiring: upper layers take that
			// for an interrupted request. Still a timeout to them (the
			// mount logs "storage timed out"), as with the other stores.
			e.Err, quiet = remote.Timeout{Msg: e.Reason}, true
		case strings.Contains(msg, "connection reset") || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			e.Reason = "connection lost (reset or closed by the server)"
		default:
			e.Reason = "I/O error"
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

func errChanged(s *Store, key, detail string) *Error {
	r := reasonChanged
	if detail != "" {
		r += ": " + detail
	}
	return &Error{Location: s.loc, Op: "read", Key: key, Reason: r, Kind: storage.ErrChanged, Permanent: true}
}
