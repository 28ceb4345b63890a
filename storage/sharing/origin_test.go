package sharing

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// The bearer token goes only to the sharing server's origin: an API
// answer redirecting to another port of the same host fails the open with
// one line naming both origins, and the other origin gets no request. A
// pre-signed URL redirecting elsewhere is followed (PROTOCOL.md's file
// URLs carry their own credentials), never with the token.
func TestTokenStaysAtOrigin(t *testing.T) {
	trap := cloudtest.NewTrap(t)
	srv := sharingtest.Start(t, time.Minute)
	srv.AddTable(t, "share", "default", "t", testkit.CopyTable(t, "dat-basic_append"))
	profile := filepath.Join(t.TempDir(), "p.share")
	srv.WriteProfile(t, profile, srv.Token)
	loc := profile + "#share.default.t"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv.RedirectAPI(trap.Redirect)
	_, err := Open(ctx, loc, storage.Options{})
	want := srv.URL + " redirected to " + trap.URL
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), srv.Token) {
		t.Fatalf("%v, want an error saying %s", err, want)
	}
	if n := trap.Requests.Load(); n != 0 {
		t.Fatalf("%d API requests reached the other origin (%q)", n, trap.Credentials())
	}
	t.Log(err)

	srv.RedirectAPI(nil)
	srv.RedirectFiles(trap.Redirect)
	st, err := Open(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.(interface{ Close() error }).Close()
	objs, err := st.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".parquet") {
			_, err := st.ReadAt(ctx, o.Key, make([]byte, 4), 0)
			if err == nil {
				t.Fatalf("%s: read from the trap's 404", o.Key)
			}
			read++
		}
	}
	if read == 0 || trap.Requests.Load() == 0 {
		t.Fatalf("%d files read, %d requests at the other origin: the redirect was not followed", read, trap.Requests.Load())
	}
	if got := trap.Credentials(); len(got) != 0 {
		t.Fatalf("the other origin received %q", got)
	}
}
