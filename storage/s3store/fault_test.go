package s3store_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/deltafs/deltafs/storage/s3store"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestFaults: the fault suite (storagetest.RunFaults) on gofakes3.
func TestFaults(t *testing.T) {
	answer := func(status int, code, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s3test.WriteError(w, r, status, code, msg) }
	}
	const throttled = "the server is throttling requests"
	storagetest.RunFaults(t, storagetest.FaultBackend{
		Start: func(t *testing.T, wrap func(http.Handler) http.Handler) storagetest.FaultServer {
			fake := s3test.NewFake(t, wrap)
			bucket := newBucket(t, fake.Endpoint)
			return storagetest.FaultServer{Addr: fake.Addr, Stop: fake.Stop, Start: fake.Start,
				Put: func(t *testing.T, key string, data []byte) { s3test.Put(t, fake.Endpoint, bucket, "t/"+key, data) },
				Open: func(t *testing.T, endpoint string, tune storagetest.FaultTuning) storagetest.FaultStore {
					o := testOptions(endpoint)
					o.MaxAttempts, o.MaxBackoff, o.RequestTimeout = tune.MaxAttempts, tune.MaxBackoff, tune.RequestTimeout
					o.DownAfter, o.ProbeInterval = tune.DownAfter, tune.ProbeInterval
					return open(t, "s3://"+bucket+"/t", o)
				}}
		},
		Answers: []storagetest.FaultAnswer{
			{Name: "SlowDown", Answer: answer(http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate."), Reason: throttled, Code: "SlowDown", HeadReason: "server error"},
			{Name: "TooManyRequests", Answer: answer(http.StatusTooManyRequests, "TooManyRequests", "Too many requests."), Reason: throttled, Code: "TooManyRequests"},
			{Name: "InternalError", Answer: answer(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."), Reason: "server error", Code: "InternalError", HeadReason: "server error"},
		},
		Classify: func(err error) (bool, int, bool) {
			var e *s3store.Error
			if !errors.As(err, &e) {
				return false, 0, false
			}
			return true, e.Attempts, e.Permanent
		},
	})
}
