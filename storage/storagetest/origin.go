package storagetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/cloudtest"
)

// RunRedirect is the object stores' redirect attack: each of opens (by
// name: static credentials, vended ones) opens a store on endpoint, which
// redirects every request to another port of 127.0.0.1 (a cloudtest.Trap).
// A Stat (or the open) must fail with one line naming both origins, and
// the trap must receive no credential.
func RunRedirect(t *testing.T, opens map[string]func(t *testing.T, endpoint string) (storage.Storage, error)) {
	trap := cloudtest.NewTrap(t)
	endpoint := httptest.NewServer(http.HandlerFunc(trap.Redirect))
	defer endpoint.Close()
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			st, err := open(t, endpoint.URL)
			if err == nil {
				if c, ok := st.(io.Closer); ok {
					defer c.Close()
				}
				_, err = st.Stat(Ctx(t), "_delta_log/00000000000000000000.json")
			}
			if got := trap.Credentials(); len(got) != 0 {
				t.Fatalf("the other origin received %q", got)
			}
			want := endpoint.URL + " redirected to " + trap.URL
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v: want one line saying %s", err, want)
			}
			t.Log(err)
		})
	}
}
