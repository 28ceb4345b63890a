package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// Tables by name in Unity Catalog: a catalog (catalog/unity/unitytest) that
// vends AWS sessions expiring on a short clock, in front of gofakes3 that
// checks every request's signature and session (no static key reaches it
// once the tables are uploaded). Every table of testdata/delta, read as
// uc://main.default.<name>, equals the same table on local disk.

// ucFixture is a catalog with tables uploaded to managed locations.
type ucFixture struct {
	uc       *unitytest.Server
	endpoint string            // S3
	local    map[string]string // table name -> local copy with the objects' times
}

// startUC starts the catalog and S3, uploads the named tables as
// main.default.<name> and points the environment of child processes at
// them: UC_ENDPOINT, UC_TOKEN, and no AWS credentials at all.
func startUC(t *testing.T, lifetime time.Duration, names []string) *ucFixture {
	t.Helper()
	uc := unitytest.Start(t, lifetime, s3test.AccessKey, s3test.SecretKey)
	endpoint := s3test.NewFake(t, uc.WrapS3).Endpoint
	f := &ucFixture{uc: uc, endpoint: endpoint, local: map[string]string{}}
	root := t.TempDir()
	for _, name := range names {
		loc := unitytest.ManagedLocation("lake")
		u, _ := url.Parse(loc)
		prefix := strings.TrimPrefix(u.Path, "/")
		src := filepath.Join(testkit.Tables(), name)
		if s3test.UploadDir(t, endpoint, "lake", prefix, src) == 0 {
			t.Fatalf("%s: nothing uploaded", name)
		}
		uc.AddTable(ucName(name), loc)
		dst := filepath.Join(root, name)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		// Log times are object times: give the local copy the same.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		pg := s3.NewListObjectsV2Paginator(s3test.NewClient(endpoint), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String(prefix + "/")})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				rel := strings.TrimPrefix(aws.ToString(o.Key), prefix+"/")
				mt := aws.ToTime(o.LastModified)
				if err := os.Chtimes(filepath.Join(dst, filepath.FromSlash(rel)), mt, mt); err != nil {
					t.Fatal(err)
				}
			}
		}
		cancel()
		f.local[name] = dst
	}
	uc.CloseAdmin()
	ucEnv(t, uc)
	return f
}

// ucEnv points the environment of child processes at the catalog
// (UC_ENDPOINT, UC_TOKEN) and at no AWS credentials at all.
func ucEnv(t *testing.T, uc *unitytest.Server) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("DATABRICKS_CONFIG_FILE", none)
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("UC_ENDPOINT", uc.URL)
	t.Setenv("UC_TOKEN", uc.Token)
}

// ucName is the catalog's name of a testdata table (no '.' in a table
// name: it separates the levels).
func ucName(name string) string { return "main.default." + strings.ReplaceAll(name, ".", "_") }

// TestUCDeltaTables: every table of testdata/delta by name equals the
// table by path: log --json, and every version's sample files.
func TestUCDeltaTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	names := deltaTableNames(t)
	f := startUC(t, 30*time.Second, names)
	flags := s3Flags(f.endpoint)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			loc := "uc://" + ucName(name)
			local := f.local[name]
			lOut, lErr, lCode := runBin(t, bin, time.Minute, "log", "--json", local)
			uOut, uErr, uCode := runBin(t, bin, time.Minute, append([]string{"log", "--json", loc}, flags...)...)
			if uCode != lCode || uOut != lOut || strings.ReplaceAll(uErr, loc, "TABLE") != strings.ReplaceAll(lErr, local, "TABLE") {
				t.Fatalf("deltafs log --json differs:\nlocal (exit %d):\n%s%s\nuc (exit %d):\n%s%s", lCode, lOut, lErr, uCode, uOut, uErr)
			}
			lTree, lRefused := mountedTree(t, bin, local)
			uTree, uRefused := mountedTree(t, bin, loc, flags...)
			if strings.ReplaceAll(uRefused, loc, "TABLE") != strings.ReplaceAll(lRefused, local, "TABLE") {
				t.Fatalf("mount refusal differs:\nlocal: %s\nuc:    %s", lRefused, uRefused)
			}
			if lRefused != "" {
				if !mustRefuse[name] && !s3MayRefuse[name] {
					t.Fatalf("both refused a table they must mount: %s", uRefused)
				}
				return
			}
			if len(lTree) == 0 || len(uTree) != len(lTree) {
				t.Fatalf("%d versions by name, %d by path", len(uTree), len(lTree))
			}
			n := 0
			for v, want := range lTree {
				if got := uTree[v]; strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("version %s: sample files differ\nuc:    %q\nlocal: %q", v, got, want)
				}
				n += len(want)
			}
			t.Logf("%d versions, %d sample files equal", len(lTree), n)
		})
	}
	if f.uc.Expired.Load() != 0 || f.uc.Refused.Load() != 0 {
		t.Errorf("S3 refused %d requests as expired, %d otherwise", f.uc.Expired.Load(), f.uc.Refused.Load())
	}
	if f.uc.Accepted.Load() == 0 {
		t.Error("no S3 request was signed with a vended session")
	}
}
