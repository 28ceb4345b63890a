package azstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/deltafs/deltafs/internal/secret"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/remote"
)

// Error is a failed Azure operation (see remote.Error); errors.As reaches
// the SDK's error (*azcore.ResponseError). Its Detail is redacted: it
// never holds a URL, a key or a SAS token.
type Error = remote.Error

func asError(err error, e **Error) bool { return errors.As(err, e) }

// Reasons, in words.
const (
	reasonNotExist      = "object does not exist"
	reasonNoCredentials = "no usable Azure credentials (set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or an Azure identity: AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, a managed identity, `az login`; --azure-anonymous for public containers)"
	reasonChanged       = "object changed since it was first read (its size or ETag differs); refusing to mix two versions"
	reasonExists        = "object already exists"
)

// describe is a cause in words: the HTTP status and the service's error
// code, or the network error without the request's URL (which may carry
// a SAS token).
func describe(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("HTTP %d", re.StatusCode)
		if re.ErrorCode != "" {
			msg += " " + re.ErrorCode
		}
		return msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func respError(err error) (status int, code string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, ""
}

func isCanceled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// retryableStatus are the answers worth another attempt (the SDK's list).
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// classify turns the final error of an operation into an *Error.
func (s *Store) classify(ctx context.Context, op, key string, err error, attempts int) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	e = &Error{Location: s.loc, Op: op, Key: key, Attempts: attempts, Err: err, Detail: secret.Redact(describe(err))}
	status, code := respError(err)
	var ne net.Error
	var dns *net.DNSError
	var ve vendedError
	var ue *remote.Unreachable
	switch {
	case errors.As(err, &ve):
		// The catalog's word (revoked, expired and not renewed) says it
		// all; the SDK's wrapping would only repeat it.
		e.Op, e.Reason, e.Detail, e.Attempts, e.Err = "", secret.Redact(oneLine(ve.Error())), "", 0, ve
		e.Permanent, e.Wide = true, true
	case errors.As(err, &ue):
		// The message says it all: the endpoint, since when, why, and
		// that it is being probed. Not Permanent: it passes when the
		// endpoint answers again.
		e.Op, e.Reason, e.Detail, e.Attempts, e.Err = "", ue.Error(), "", 0, ue
		e.Wide = true
	case s.life.Err() != nil && ctx.Err() == nil:
		e.Reason, e.Detail, e.Err, e.Permanent = "request abandoned: the store was closed", "", nil, true
	case isCanceled(ctx, err) || (ctx.Err() != nil && status == 0):
		e.Reason, e.Detail, e.Permanent = "canceled", "", true
		if cerr := ctx.Err(); cerr != nil {
			e.Reason, e.Kind = cerr.Error(), cerr
		}
	case code == "BlobNotFound" || (status == http.StatusNotFound && code == "" && op != "ListBlobs"):
		e.Reason, e.Kind, e.Permanent = reasonNotExist, storage.ErrNotExist, true
	case code == "ContainerNotFound":
		e.Reason = fmt.Sprintf("container %s does not exist%s", s.where.Container, s.inAccount())
		e.Kind, e.Permanent, e.Wide = storage.ErrNotExist, true, true
	case code == "ResourceNotFound" && s.opts.AzureOptions.Anonymous:
		e.Reason = fmt.Sprintf("container %s does not exist%s or is not public (anonymous access)", s.where.Container, s.inAccount())
		e.Kind, e.Permanent, e.Wide = storage.ErrNotExist, true, true
	case code == "AuthenticationFailed" || code == "InvalidAuthenticationInfo":
		e.Reason = "invalid credentials: the service refused the request's signature (check the account key or SAS token, and that it is for this account)"
		e.Permanent, e.Wide = true, true
	case code == "NoAuthenticationInformation":
		e.Reason = "the container is not public: credentials are required (AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN or an Azure identity)"
		e.Permanent, e.Wide = true, true
	case strings.HasPrefix(code, "Authorization") || code == "InsufficientAccountPermissions" || code == "AccountIsDisabled" || status == http.StatusForbidden:
		e.Reason = "access denied (check the credentials: the account key or SAS token and its permissions, or the Azure identity's role; reading needs read and list, importing also write)"
		e.Permanent, e.Wide = true, true
	case code == "ServerBusy" || status == http.StatusTooManyRequests || code == "OperationTimedOut" && status == http.StatusServiceUnavailable:
		e.Reason = "the service is throttling requests; gave up"
		if attempts > 1 {
			e.Reason = fmt.Sprintf("the service is throttling requests; gave up after %d attempts", attempts)
		}
	case status >= 500:
		e.Reason = fmt.Sprintf("server error; gave up after %d attempts", attempts)
	case status >= 400:
		e.Reason, e.Permanent = "request refused", !retryableStatus(status)
	case errors.As(err, &dns):
		e.Reason = "cannot resolve the Azure endpoint's host " + dns.Name
		e.Wide, e.Detail = true, ""
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = fmt.Sprintf("cannot connect to the Azure endpoint %s (connection refused)", s.endpoint)
		e.Wide, e.Detail = true, ""
	case errors.As(err, &ne) && ne.Timeout():
		e.Reason = fmt.Sprintf("request timed out (limit %v per attempt, %v to connect)", s.opts.RequestTimeout, s.opts.ConnectTimeout)
		// The per-attempt timeout is the store's, not the caller's: the
		// error must not read as the caller's context expiring.
		e.Err = remote.Timeout{Msg: e.Detail}
	default:
		e.Reason = remote.IOReason(err)
	}
	if status == 0 && attempts > 1 && !e.Permanent && ue == nil && !strings.Contains(e.Reason, "attempts") {
		e.Reason += fmt.Sprintf("; gave up after %d attempts", attempts)
	}
	return e
}

func (s *Store) inAccount() string {
	if s.account == "" {
		return ""
	}
	return " in account " + s.account
}

func errChanged(s *Store, op, key, detail string) *Error {
	r := reasonChanged
	if detail != "" {
		r += ": " + detail
	}
	return &Error{Location: s.loc, Op: op, Key: key, Reason: r, Kind: storage.ErrChanged, Permanent: true}
}
