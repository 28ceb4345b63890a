package gcsstore_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestFaults: the fault suite (storagetest.RunFaults) on fake-gcs-server.
func TestFaults(t *testing.T) {
	gcstest.Env(t)
	answer := func(status int, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { gcstest.WriteError(w, status, msg) }
	}
	storagetest.RunFaults(t, storagetest.FaultBackend{
		Start: func(t *testing.T, wrap func(http.Handler) http.Handler) storagetest.FaultServer {
			fake := gcstest.NewFake(t, wrap)
			bucket := newBucket(fake)
			return storagetest.FaultServer{Addr: fake.Addr, Stop: fake.Stop, Start: fake.Start,
				Put: func(t *testing.T, key string, data []byte) { fake.Put(bucket, "t/"+key, data) },
				Open: func(t *testing.T, endpoint string, tune storagetest.FaultTuning) storagetest.FaultStore {
					o := testOptions(endpoint)
					o.MaxAttempts, o.MaxBackoff, o.RequestTimeout = tune.MaxAttempts, tune.MaxBackoff, tune.RequestTimeout
					o.DownAfter, o.ProbeInterval = tune.DownAfter, tune.ProbeInterval
					return open(t, "gs://"+bucket+"/t", o)
				}}
		},
		Answers: []storagetest.FaultAnswer{
			{Name: "429", Answer: answer(http.StatusTooManyRequests, "The rate of change requests to the object exceeds the rate limit."), Reason: "the server is throttling requests", Code: "HTTP 429"},
			{Name: "503", Answer: answer(http.StatusServiceUnavailable, "Backend Error"), Reason: "server error", Code: "HTTP 503"},
		},
		Classify: func(err error) (bool, int, bool) {
			var e *gcsstore.Error
			if !errors.As(err, &e) {
				return false, 0, false
			}
			return true, e.Attempts, e.Permanent
		},
		ResumesBodies: true,
	})
}
