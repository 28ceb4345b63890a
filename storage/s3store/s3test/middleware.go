package s3test

import (
	"net/http"
	"sync/atomic"
)

// Throttle answers the first n requests with 503 SlowDown, as S3 does when
// a prefix is over its request rate, and passes the rest to the server. n < 0
// throttles every request. The returned counter counts throttled requests.
func Throttle(n int64) (wrap func(http.Handler) http.Handler, throttled *atomic.Int64) {
	return ErrorFirst(n, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
}

// ErrorFirst answers the first n requests (every request for n < 0) with an
// S3 error document of the given status and code.
func ErrorFirst(n int64, status int, code, message string) (wrap func(http.Handler) http.Handler, count *atomic.Int64) {
	count = new(atomic.Int64)
	var seen atomic.Int64
	wrap = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n < 0 || seen.Add(1) <= n {
				count.Add(1)
				WriteError(w, r, status, code, message)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	return wrap, count
}

// WriteError writes an S3 XML error response. HEAD responses carry no body.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>` + code + `</Code><Message>` + message + `</Message><RequestId>s3test</RequestId></Error>`))
}

// StripHeader removes request headers before the server sees them: a server
// that ignores a header (such as If-None-Match) behaves this way.
func StripHeader(names ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, n := range names {
				r.Header.Del(n)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Chain applies wrappers so that the first one sees a request first.
func Chain(wraps ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		for i := len(wraps) - 1; i >= 0; i-- {
			if wraps[i] != nil {
				h = wraps[i](h)
			}
		}
		return h
	}
}
