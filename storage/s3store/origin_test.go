package s3store_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/deltafs/deltafs/internal/cloudtest"
	"github.com/deltafs/deltafs/internal/s3test"
	"github.com/deltafs/deltafs/storage/s3store"
)

// Credentials stay at the endpoint's origin: an endpoint redirecting to
// another port of the same host fails the request with one line naming
// both origins, and the other origin never sees the signature or the
// session token (Go's client forwards Authorization to the same host on
// any port, and X-Amz-Security-Token anywhere).
func TestCredentialsStayAtOrigin(t *testing.T) {
	trap := cloudtest.NewTrap(t)
	endpoint := httptest.NewServer(http.HandlerFunc(trap.Redirect))
	defer endpoint.Close()
	o := testOptions(endpoint.URL)
	o.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, "FwoGZXIvYXdzE-session-token")
	o.MaxAttempts = 1
	st, err := s3store.NewWithOptions(ctxT(t), "s3://lake/t", o)
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
