package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// S3 conformance: every table of testdata/delta, uploaded to an S3 server
// on 127.0.0.1, reads exactly like the same table on local disk through
// the real binary and its real command line (--s3-endpoint, --s3-path-style,
// --s3-region; credentials from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY): `deltafs log --json` prints the same lines, and
// the mounts have the same versions with the same sample files, byte for
// byte.

// s3MayRefuse are tables whose features a reader may lack (type widening,
// the variant type): both mounts may refuse them, with the same line.
var s3MayRefuse = map[string]bool{"kernelrs-type-widening": true, "deltars-spark-variant-checkpoint": true}

// s3Env points the AWS credential chain of child processes at the test
// key pair of endpoint and nothing else (no shared files, no IMDS).
func s3Env(t *testing.T, endpoint string) {
	t.Helper()
	ak, sk := s3test.Credentials(endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", ak)
	t.Setenv("AWS_SECRET_ACCESS_KEY", sk)
	none := filepath.Join(t.TempDir(), "no-aws-config")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

// s3Flags are the command-line flags that reach the server at endpoint.
func s3Flags(endpoint string) []string {
	return []string{"--s3-endpoint", endpoint, "--s3-path-style", "--s3-region", s3test.Region}
}

// deltaTableNames are the tables of testdata/delta.
func deltaTableNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(testkit.Tables())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "_") {
			out = append(out, e.Name())
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d tables in %s", len(out), testkit.Tables())
	}
	return out
}

// uploadTables uploads tables to bucket, each under its name, and returns
// a local copy of each whose files carry the LastModified time of their
// object (log timestamps are file times, and git keeps none).
func uploadTables(t *testing.T, endpoint, bucket string, names []string) map[string]string {
	t.Helper()
	return mirrorTables(t, names,
		func(name, src string) int { return s3test.UploadDir(t, endpoint, bucket, name, src) },
		func() map[string]time.Time {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			times := map[string]time.Time{}
			pg := s3.NewListObjectsV2Paginator(s3test.NewClient(endpoint), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			for pg.HasMorePages() {
				page, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatalf("list s3://%s: %v", bucket, err)
				}
				for _, o := range page.Contents {
					times[aws.ToString(o.Key)] = aws.ToTime(o.LastModified)
				}
			}
			return times
		})
}

// runBin runs the binary with a time limit and returns stdout, stderr and
// the exit status (-1: killed at the limit).
func runBin(t *testing.T, bin string, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		return o.String(), e.String(), -1
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("deltafs %v: %v", args, err)
		}
		return o.String(), e.String(), ee.ExitCode()
	}
	return o.String(), e.String(), 0
}

// mountedTree mounts table (JSON samples, two shards, no disk cache) and
// returns every version's sample files as sorted "shard/path sha256"
// lines, or the mount's error line when it refuses the table.
func mountedTree(t *testing.T, bin, table string, flags ...string) (tree map[string][]string, refused string) {
	t.Helper()
	mnt := mounttest.Mountpoint(t)
	args := append([]string{"--data-column", "-", "--shards", "2", "--cache-dir", "none"}, flags...)
	m, err := mounttest.StartAt(bin, table, mnt, args...)
	if m != nil {
		up := err == nil
		defer func() {
			if err := m.Stop(); err != nil && up {
				t.Errorf("%s: unmount: %v\n%s", table, err, m.Log())
			}
			if mounttest.Mounted(mnt) {
				mounttest.Unmount(mnt)
				t.Errorf("%s: left mounted", table)
			}
		}()
	}
	if err != nil {
		return nil, lastLine(err.Error())
	}
	versions, err := os.ReadDir(filepath.Join(mnt, "version"))
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	tree = map[string][]string{}
	for _, v := range versions {
		tree[v.Name()] = versionTree(t, mnt, v.Name())
	}
	return tree, ""
}

// versionTree is one version's sample files on a mount of two shards, as
// sorted "shard/path sha256" lines.
func versionTree(t *testing.T, mnt, version string) []string {
	t.Helper()
	lines := []string{}
	for k := range 2 {
		sd := filepath.Join(mnt, "version", version, "shard", fmt.Sprint(k))
		for _, p := range samplesUnder(t, sd) {
			b, err := os.ReadFile(filepath.Join(sd, p))
			if err != nil {
				t.Fatalf("%s version %s: %s: %v", mnt, version, p, err)
			}
			lines = append(lines, fmt.Sprintf("%d/%s %x", k, p, sha256.Sum256(b)))
		}
	}
	sort.Strings(lines)
	return lines
}

// compareS3Table checks one table: log --json and the mounted tree over
// s3://bucket/name against the local copy.
func compareS3Table(t *testing.T, bin, endpoint, bucket, name, local string) {
	compareRemoteTable(t, bin, "s3://"+bucket+"/"+name, s3Flags(endpoint), name, local)
}

// compareRemoteTable checks one table of testdata/delta in an object store
// (loc, reached with flags): log --json and the mounted tree against the
// local copy.
func compareRemoteTable(t *testing.T, bin, loc string, flags []string, name, local string) {
	lOut, lErr, lCode := runBin(t, bin, time.Minute, "log", "--json", local)
	sOut, sErr, sCode := runBin(t, bin, time.Minute, append([]string{"log", "--json", loc}, flags...)...)
	if sCode != lCode || sOut != lOut || strings.ReplaceAll(sErr, loc, "TABLE") != strings.ReplaceAll(lErr, local, "TABLE") {
		t.Fatalf("deltafs log --json differs:\nlocal (exit %d):\n%s%s\n%s (exit %d):\n%s%s", lCode, lOut, lErr, loc, sCode, sOut, sErr)
	}
	if lCode == 0 && strings.Count(lOut, "\n") == 0 {
		t.Fatalf("log --json printed nothing")
	}
	// cat: the latest version's rows, or the same refusal.
	lOut, lErr, lCode = runBin(t, bin, time.Minute, "cat", local)
	sOut, sErr, sCode = runBin(t, bin, time.Minute, append([]string{"cat", loc}, flags...)...)
	if sCode != lCode || sOut != lOut || strings.ReplaceAll(sErr, loc, "TABLE") != strings.ReplaceAll(lErr, local, "TABLE") {
		t.Fatalf("deltafs cat differs:\nlocal (exit %d):\n%.2000s%s\n%s (exit %d):\n%.2000s%s", lCode, lOut, lErr, loc, sCode, sOut, sErr)
	}
	// warm: version 0 (or the first readable) into a fresh cache, the same
	// samples warmed, or the same refusal.
	lWarm, lCode := warmSamples(t, bin, local, nil)
	sWarm, sCode := warmSamples(t, bin, loc, flags)
	if sCode != lCode || strings.ReplaceAll(sWarm, loc, "TABLE") != strings.ReplaceAll(lWarm, local, "TABLE") {
		t.Fatalf("deltafs warm differs: local (exit %d) %s; %s (exit %d) %s", lCode, lWarm, loc, sCode, sWarm)
	}

	lTree, lRefused := mountedTree(t, bin, local)
	sTree, sRefused := mountedTree(t, bin, loc, flags...)
	if strings.ReplaceAll(sRefused, loc, "TABLE") != strings.ReplaceAll(lRefused, local, "TABLE") {
		t.Fatalf("mount refusal differs:\nlocal:  %s\nremote: %s", lRefused, sRefused)
	}
	if lRefused != "" {
		if !mustRefuse[name] && !s3MayRefuse[name] {
			t.Fatalf("both refused a table they must mount: %s", sRefused)
		}
		t.Logf("both refused: %s", sRefused)
		return
	}
	if mustRefuse[name] {
		t.Fatal("both mounted a table they must refuse")
	}
	if len(lTree) == 0 {
		t.Fatal("local mount has no version")
	}
	samples := 0
	for v, want := range lTree {
		got, ok := sTree[v]
		if !ok {
			t.Errorf("version %s: missing over %s", v, loc)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("version %s: %d sample files over %s, %d local", v, len(got), loc, len(want))
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("version %s: sample files differ\nremote: %q\nlocal:  %q", v, got, want)
		}
		samples += len(want)
	}
	if len(sTree) != len(lTree) {
		t.Errorf("%d versions over %s, %d local", len(sTree), loc, len(lTree))
	}
	t.Logf("%d versions, %d sample files equal", len(lTree), samples)
}

// warmSamples runs `deltafs warm` on the first version `deltafs log`
// lists, into a fresh cache, and returns what it did (the samples warmed,
// or the error line) and its exit status.
func warmSamples(t *testing.T, bin, loc string, flags []string) (string, int) {
	t.Helper()
	out, stderr, code := runBin(t, bin, time.Minute, append([]string{"log", "--json", loc}, flags...)...)
	if code != 0 {
		return lastLine(stderr), code
	}
	var first struct{ Version int64 }
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &first); err != nil {
		t.Fatalf("log --json %s: %v", loc, err)
	}
	args := append([]string{"warm", loc, "--version", strconv.FormatInt(first.Version, 10), "--cache-dir", t.TempDir()}, flags...)
	_, stderr, code = runBin(t, bin, time.Minute, args...)
	if code != 0 {
		return lastLine(stderr), code
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "msg=warmed ") {
			samples, _, _ := strings.Cut(l[strings.Index(l, "samples="):], " ")
			return samples, code
		}
	}
	t.Fatalf("warm %s: no summary line in %q", loc, stderr)
	return "", code
}

// TestMountS3DeltaTables: every table of testdata/delta in an in-process
// gofakes3.
func TestMountS3DeltaTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	compareS3Tables(t, s3test.StartGofakes3(t), "delta", deltaTableNames(t))
}

// TestMountS3DeltaTablesMoto: a few tables in moto_server, a second S3
// implementation (slow GETs: kept small).
func TestMountS3DeltaTablesMoto(t *testing.T) {
	mounttest.RequireFUSE(t)
	compareS3Tables(t, s3test.StartMoto(t), "delta-moto",
		[]string{"dat-with_checkpoint", "golden-dv-partitioned-with-checkpoint", "deltars-table_with_column_mapping"})
}

// compareS3Tables uploads the named tables to bucket at endpoint and
// compares each, mounted over S3, with the same table on local disk.
func compareS3Tables(t *testing.T, endpoint, bucket string, names []string) {
	bin := mounttest.Binary(t)
	s3Env(t, endpoint)
	local := uploadTables(t, endpoint, bucket, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { compareS3Table(t, bin, endpoint, bucket, name, local[name]) })
	}
}

// TestMountS3Refuses: wrong credentials, access denied, a missing bucket, a missing table
// and an endpoint that is down each fail `deltafs mount` before mounting,
// within a bounded time, with exit status 1 and one error line on stderr
// (the last; before it at most two info lines saying what was retried)
// that names the table and the cause and holds no secret.
func TestMountS3Refuses(t *testing.T) {
	bin := mounttest.Binary(t)
	mounttest.RequireFUSE(t)
	fake := s3test.StartGofakes3(t)
	s3test.UploadDir(t, fake, "tables", "basic", filepath.Join(testkit.Tables(), "dat-basic_append"))
	moto, ak, sk := s3test.StartMotoAuth(t)
	s3test.UploadDir(t, moto, "tables", "basic", filepath.Join(testkit.Tables(), "dat-basic_append"))
	down := s3test.NewFake(t, nil)
	down.Stop()
	denyAll, _ := s3test.ErrorFirst(-1, http.StatusForbidden, "AccessDenied", "Access Denied")
	denied := s3test.NewFake(t, denyAll).Endpoint

	for _, tc := range []struct {
		name, endpoint, table, ak, sk string
		want                          []string // all must be in the line (lower case)
	}{
		{"unknown access key", moto, "s3://tables/basic", "AKIANOSUCHKEY0000000", sk, []string{"invalid credentials", "access key id"}},
		{"wrong secret", moto, "s3://tables/basic", ak, "wrong-secret-0123456789", []string{"invalid credentials", "secret access key"}},
		{"access denied", denied, "s3://tables/basic", s3test.AccessKey, s3test.SecretKey, []string{"access denied", "check credentials and the bucket policy"}},
		{"missing bucket", fake, "s3://no-such-bucket/basic", s3test.AccessKey, s3test.SecretKey, []string{"bucket no-such-bucket does not exist"}},
		{"missing table", fake, "s3://tables/nope", s3test.AccessKey, s3test.SecretKey, []string{"not a delta table"}},
		{"endpoint down", down.Endpoint, "s3://tables/basic", s3test.AccessKey, s3test.SecretKey, []string{"cannot connect", "connection refused", "gave up after 3 attempts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s3Env(t, tc.endpoint)
			t.Setenv("AWS_ACCESS_KEY_ID", tc.ak)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.sk)
			dir := t.TempDir()
			start := time.Now()
			args := append([]string{"mount", tc.table, dir, "--s3-retries", "2", "--s3-timeout", "5s", "--cache-dir", "none"}, s3Flags(tc.endpoint)...)
			_, stderr, code := runBin(t, bin, 60*time.Second, args...)
			el := time.Since(start)
			if mounttest.Mounted(dir) {
				mounttest.Unmount(dir)
				t.Fatal("left mounted")
			}
			// The error is the last line; the lines before it are log lines
			// (an info line when a request is retried), at most two.
			msg := requireErrorLine(t, stderr, code, tc.table, 2, tc.want)
			if strings.Contains(stderr, tc.sk) || strings.Contains(stderr, sk) {
				t.Fatalf("%q holds a secret key", stderr)
			}
			if el > 30*time.Second {
				t.Errorf("failed after %v", el)
			}
			t.Logf("%v: %s", el.Round(time.Millisecond), msg)
		})
	}
}
