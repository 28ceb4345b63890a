package azstore_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/internal/aztest"
	"github.com/deltafs/deltafs/internal/cloudtest"
	"github.com/deltafs/deltafs/storage/azstore"
)

// Credentials stay at the endpoint's origin: an endpoint redirecting to
// another port of the same host fails the request with one line naming
// both origins, and the other origin never sees the Shared Key signature
// (Go's client forwards Authorization to the same host on any port).
func TestCredentialsStayAtOrigin(t *testing.T) {
	trap := cloudtest.NewTrap(t)
	endpoint := httptest.NewServer(http.HandlerFunc(trap.Redirect))
	defer endpoint.Close()
	useConnString(t, endpoint.URL+"/"+aztest.Account)
	o := testOptions()
	o.MaxAttempts = 1
	st, err := azstore.NewWithOptions(ctxT(t), "az://lake/t", o)
	if err == nil {
		defer st.Close()
		_, err = st.Stat(ctxT(t), "_delta_log/00000000000000000000.json")
	}
	if got := trap.Credentials(); len(got) != 0 {
		t.Fatalf("the other origin received %q", got)
	}
	want := endpoint.URL + " redirected to " + trap.URL
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v: want one line saying %s", err, want)
	}
	t.Log(err)
}
