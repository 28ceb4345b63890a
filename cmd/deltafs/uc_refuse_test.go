package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deltafs/deltafs/fusefs/mounttest"
)

// TestUCRefuses: a wrong token, a missing table, a revoked grant and no
// catalog configured each fail `deltafs log` with status 1 and one line
// naming the table and the cause, holding no secret.
func TestUCRefuses(t *testing.T) {
	bin := mounttest.Binary(t)
	const name = "dat-basic_append"
	f := startUC(t, time.Minute, []string{name})
	loc := "uc://" + ucName(name)
	f.uc.AddTable("main.default.revoked", "s3://lake/x")
	f.uc.Revoke("main.default.revoked")
	for _, tc := range []struct {
		name, table string
		env         map[string]string
		want        string
	}{
		{"wrong token", loc, map[string]string{"UC_TOKEN": "dapi-wrong-token-0123"}, "looking up the table: the catalog refuses the token from UC_TOKEN (HTTP 401 UNAUTHENTICATED"},
		{"missing table", "uc://main.default.nope", nil, "looking up the table: no such table (HTTP 404 NOT_FOUND"},
		{"revoked", "uc://main.default.revoked", nil, "looking up the table: permission denied (HTTP 403 PERMISSION_DENIED"},
		{"no catalog", loc, map[string]string{"UC_ENDPOINT": "", "UC_TOKEN": ""}, "no Unity Catalog endpoint: pass --uc-endpoint"},
		{"bad name", "uc://main.t", nil, "want uc://catalog.schema.table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, stderr, code := runBin(t, bin, time.Minute, append([]string{"log", tc.table}, s3Flags(f.endpoint)...)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "deltafs: "+tc.table+": ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr %q: want status 1 and one line naming %s and saying %q", code, stderr, tc.table, tc.want)
			}
			for _, s := range append(f.uc.Secrets(), "dapi-wrong-token-0123") {
				if strings.Contains(stderr, s) {
					t.Fatalf("%q holds a secret", stderr)
				}
			}
		})
	}
}
