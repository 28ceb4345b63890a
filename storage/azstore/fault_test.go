package azstore_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/deltafs/deltafs/storage/azstore"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/storagetest"
)

// TestFaults: the fault suite (storagetest.RunFaults) on Azurite, behind
// aztest.Fake's front (which answers the Blob service's errors).
func TestFaults(t *testing.T) {
	answer := func(status int, code, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { aztest.WriteError(w, r, status, code, msg) }
	}
	storagetest.RunFaults(t, storagetest.FaultBackend{
		Start: func(t *testing.T, wrap func(http.Handler) http.Handler) storagetest.FaultServer {
			fake := aztest.NewFake(t, wrap)
			c := newContainer(t, fake.Server.Endpoint, false)
			return storagetest.FaultServer{Addr: fake.Addr, Stop: fake.Stop, Start: fake.Start,
				Put: func(t *testing.T, key string, data []byte) { aztest.Put(t, fake.Server.Endpoint, c, "t/"+key, data) },
				Open: func(t *testing.T, endpoint string, tune storagetest.FaultTuning) storagetest.FaultStore {
					useConnString(t, endpoint+"/"+aztest.Account)
					o := testOptions()
					o.MaxAttempts, o.MaxBackoff, o.RequestTimeout = tune.MaxAttempts, tune.MaxBackoff, tune.RequestTimeout
					o.DownAfter, o.ProbeInterval = tune.DownAfter, tune.ProbeInterval
					return open(t, "az://"+c+"/t", o)
				}}
		},
		Answers: []storagetest.FaultAnswer{
			{Name: "ServerBusy", Answer: answer(http.StatusServiceUnavailable, "ServerBusy", "The server is currently unable to receive requests. Please retry your request."), Reason: "the service is throttling requests", Code: "ServerBusy"},
			{Name: "InternalError", Answer: answer(http.StatusInternalServerError, "InternalError", "The server encountered an internal error. Please retry the request."), Reason: "server error", Code: "InternalError"},
		},
		Classify: func(err error) (bool, int, bool) {
			var e *azstore.Error
			if !errors.As(err, &e) {
				return false, 0, false
			}
			return true, e.Attempts, e.Permanent
		},
	})
}
