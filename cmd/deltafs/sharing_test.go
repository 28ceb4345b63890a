package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/sharing/sharingtest"
)

// Tables by name through Delta Sharing: a sharing server
// (storage/sharing/sharingtest) serves every table of testdata/delta, its files
// through pre-signed URLs that expire on a short clock. Every table read
// as PROFILE.share#share.schema.table equals the table read by path.

// sharingFixture is a server sharing copies of the named tables as
// share.default.<name>, and a profile for it.
type sharingFixture struct {
	srv     *sharingtest.Server
	profile string
	local   map[string]string
}

func startSharing(t *testing.T, lifetime time.Duration, names []string) *sharingFixture {
	t.Helper()
	srv := sharingtest.Start(t, lifetime)
	f := &sharingFixture{srv: srv, profile: filepath.Join(t.TempDir(), "config.share"), local: map[string]string{}}
	root := t.TempDir()
	for _, name := range names {
		dst := filepath.Join(root, name)
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(testkit.Tables(), name))); err != nil {
			t.Fatal(err)
		}
		srv.AddTable(t, "share", "default", sharedName(name), dst)
		f.local[name] = dst
	}
	srv.WriteProfile(t, f.profile, srv.Token)
	return f
}

// sharedName is the share's name of a testdata table (no '.' in a table
// name: it separates the levels).
func sharedName(name string) string { return strings.ReplaceAll(name, ".", "_") }

func (f *sharingFixture) location(name string) string {
	return f.profile + "#share.default." + sharedName(name)
}

// noOperation blanks the operation of `log --json` lines: the protocol
// shares no commitInfo, so a shared table's commits have none.
var noOperation = regexp.MustCompile(`"operation":"[^"]*"`)

// emptyTime blanks the timestamp of versions without files: a query's
// answer gives a version's timestamp on its files only, so a version with
// none gets the nearest known one (a deviation the README names).
var emptyTime = regexp.MustCompile(`"timestamp":[0-9]+,("operation":""),("files":0,)`)

// comparableLog is log --json less what the protocol does not share.
func comparableLog(s string) string {
	s = noOperation.ReplaceAllString(s, `"operation":""`)
	return emptyTime.ReplaceAllString(s, `"timestamp":0,$1,$2`)
}

// TestSharingDeltaTables: every table of testdata/delta by name equals the
// table by path: log --json (but the operation), and every version's
// sample files.
func TestSharingDeltaTables(t *testing.T) { checkSharedTables(t, sharingMode{}) }

// TestSharingParquetFormat: a server that ignores the capabilities header
// answers in the parquet response format only; every table it serves
// reads as the table by path, and those that need the delta format
// (deletion vectors, column mapping) are refused in one line.
func TestSharingParquetFormat(t *testing.T) { checkSharedTables(t, sharingMode{parquet: true}) }

// TestSharingAsyncPagedOAuth: a server that answers every query
// asynchronously (a pending status first), in pages of two files, to an
// OAuth profile whose tokens live 4 s: every table reads as by path.
func TestSharingAsyncPagedOAuth(t *testing.T) { checkSharedTables(t, sharingMode{asyncOAuth: true}) }

// sharingMode is how the test server answers.
type sharingMode struct {
	parquet    bool // the parquet response format only
	asyncOAuth bool // asynchronous queries, pages, OAuth tokens
}

// needsDeltaFormat: the table's readers need what the parquet response
// format cannot express.
func needsDeltaFormat(t *testing.T, dir string) bool {
	b, err := exec.Command("grep", "-rlE", "deletionVectors|columnMapping", filepath.Join(dir, "_delta_log")).Output()
	return err == nil && len(b) > 0
}

func checkSharedTables(t *testing.T, mode sharingMode) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	names := deltaTableNames(t)
	f := startSharing(t, 20*time.Second, names)
	parquet := mode.parquet
	f.srv.SetParquetOnly(parquet)
	if mode.asyncOAuth {
		f.srv.SetAsync(1)
		f.srv.SetPageSize(2)
		f.srv.EnableOAuth("deltafs-ci", "oauth-client-secret-1234", 4*time.Second, nil)
		f.srv.WriteOAuthProfile(t, f.profile, "deltafs-ci", "oauth-client-secret-1234", "")
		defer func() {
			if f.srv.Polls.Load() == 0 || f.srv.TokenRequests.Load() == 0 {
				t.Errorf("%d polls of asynchronous queries, %d token requests: the mode was not exercised", f.srv.Polls.Load(), f.srv.TokenRequests.Load())
			}
		}()
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			loc := f.location(name)
			local := f.local[name]
			lOut, lErr, lCode := runBin(t, bin, time.Minute, "log", "--json", local)
			sOut, sErr, sCode := runBin(t, bin, time.Minute, "log", "--json", loc, "--log-level", "debug")
			if strings.Contains(sOut+sErr, "oauth-client-secret-1234") || strings.Contains(sOut+sErr, "oat-") {
				t.Errorf("the OAuth secret or a token is shown: %s", sErr)
			}
			if parquet && lCode == 0 && needsDeltaFormat(t, local) {
				errLines := strings.Split(strings.TrimSpace(sErr), "\n")
				if sCode == 0 || !strings.Contains(errLines[len(errLines)-1], "responseformat=delta") {
					t.Fatalf("a table that needs the delta format, served in parquet: exit %d, %q", sCode, sErr)
				}
				return
			}
			if sCode != lCode || comparableLog(sOut) != comparableLog(lOut) {
				t.Fatalf("deltafs log --json differs:\nlocal (exit %d):\n%s%s\nshared (exit %d):\n%s%s", lCode, lOut, lErr, sCode, sOut, sErr)
			}
			lTree, lRefused := mountedTree(t, bin, local)
			sTree, sRefused := mountedTree(t, bin, loc)
			if (lRefused == "") != (sRefused == "") {
				t.Fatalf("mount refusal differs:\nlocal:  %s\nshared: %s", lRefused, sRefused)
			}
			if lRefused != "" {
				if !mustRefuse[name] && !s3MayRefuse[name] {
					t.Fatalf("both refused a table they must mount: %s", sRefused)
				}
				return
			}
			if len(lTree) == 0 || len(sTree) != len(lTree) {
				t.Fatalf("%d versions by name, %d by path", len(sTree), len(lTree))
			}
			n := 0
			for v, want := range lTree {
				got := sTree[v]
				if parquet {
					// The parquet format shares no modificationTime, which
					// orders a version's files into shards: the same
					// samples, the same bytes, maybe in other shards.
					got, want = unsharded(got), unsharded(want)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("version %s: sample files differ\nshared: %q\nlocal:  %q", v, got, want)
				}
				n += len(want)
			}
			t.Logf("%d versions, %d sample files equal", len(lTree), n)
		})
	}
	if f.srv.Refused.Load() != 0 {
		t.Errorf("the file server refused %d requests with a bad signature", f.srv.Refused.Load())
	}
	if f.srv.Served.Load() == 0 {
		t.Error("no file was read through a pre-signed URL")
	}
}

// dupSuffix is the ~N a sample's name takes after a namesake in its shard.
var dupSuffix = regexp.MustCompile(`~[0-9]+(\.[^ ]* )`)

// unsharded is a version's sample files without their shard (nor the ~N
// a shard gives namesakes), sorted.
func unsharded(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		_, f, _ = strings.Cut(f, "/")
		out[i] = dupSuffix.ReplaceAllString(f, "$1")
	}
	slices.Sort(out)
	return out
}

// readVersions reads every sample file of every version under mnt/version
// and returns how many it read; a failed read fails the test.
func readVersions(t *testing.T, mnt string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(mnt, "version"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.Contains(p, string(filepath.Separator)+"shard"+string(filepath.Separator)) {
			// Read, then drop the file's pages from the kernel's cache,
			// so that the next round reads through deltafs again.
			fh, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.ReadAll(fh)
			if err == nil {
				err = unix.Fadvise(int(fh.Fd()), 0, 0, unix.FADV_DONTNEED)
			}
			fh.Close()
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return n
}

// TestSharingURLRenewal: URLs that live 3 s, a read of every version over
// several lifetimes with no cache: every read works, URLs are renewed
// before they expire (the file server refuses none as expired), and no
// token or URL reaches the debug log, /metrics or .deltafs/stats.
func TestSharingURLRenewal(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	name := "golden-time-travel-start-start20-start40"
	f := startSharing(t, 3*time.Second, []string{name})
	m := mounttest.Start(t, bin, f.location(name), "--log-level", "debug", "--data-column", "-", "--cache-dir", "none", "--mem-cache", "0", "--metrics-addr", "127.0.0.1:0")
	mnt := m.Dir
	murl := metricsURL(t, m)
	queries := f.srv.Queries.Load()
	deadline := time.Now().Add(10 * time.Second)
	rounds, files := 0, 0
	for time.Now().Before(deadline) || rounds < 3 {
		files += readVersions(t, mnt)
		rounds++
		time.Sleep(time.Second)
	}
	if files == 0 {
		t.Fatal("no sample file read")
	}
	if f.srv.Queries.Load() == queries {
		t.Error("no query renewed the URLs over 10 s of 3 s URLs")
	}
	if e := f.srv.Expired.Load(); e != 0 {
		t.Errorf("%d reads used an expired URL", e)
	}
	stats, err := os.ReadFile(filepath.Join(mnt, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(murl)
	if err != nil {
		t.Fatal(err)
	}
	metb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	met := string(metb)
	_ = m.Stop()
	log := m.Log()
	if !strings.Contains(log, "renewed pre-signed URLs") {
		t.Errorf("no renewal logged:\n%s", log)
	}
	for what, s := range map[string]string{"log": log, "stats": string(stats), "metrics": met} {
		for _, secret := range []string{f.srv.Token, "X-Signature", "X-Expires", f.srv.URL + "/lake"} {
			if strings.Contains(s, secret) {
				t.Errorf("the %s holds %q", what, secret)
			}
		}
	}
	t.Logf("%d rounds, %d files read, %d queries", rounds, files, f.srv.Queries.Load())
}

// TestSharingHistoryRefused: a share without history serves the latest
// version; an older one fails with one line that says so, quoting the
// server.
func TestSharingHistoryRefused(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	name := "dat-basic_append"
	f := startSharing(t, time.Minute, []string{name})
	f.srv.SetHistory(false)
	loc := f.location(name)
	m := mounttest.Start(t, bin, loc, "--data-column", "-", "--cache-dir", "none")
	_ = m
	_, stderr, code := runBin(t, bin, time.Minute, "cat", "--version", "0", loc)
	stderr = lastLine(stderr) // after the info line that history is off
	if code != 1 ||
		!strings.Contains(stderr, "the share does not allow history") || !strings.Contains(stderr, "history sharing is not enabled") || !strings.Contains(stderr, "version 0") {
		t.Fatalf("cat --version 0: exit %d, want one line saying the share does not allow history:\n%s", code, stderr)
	}
	out, stderr, code := runBin(t, bin, time.Minute, "cat", loc)
	if code != 0 || out == "" {
		t.Fatalf("cat latest: exit %d\n%s", code, stderr)
	}
}

// TestSharingBadToken: a token the server refuses is one line naming the
// table and the profile, never the token.
func TestSharingBadToken(t *testing.T) {
	bin := mounttest.Binary(t)
	name := "dat-basic_append"
	f := startSharing(t, time.Minute, []string{name})
	f.srv.WriteProfile(t, f.profile, "dss-wrong-token-1234")
	for _, args := range [][]string{{"log", "--json"}, {"mount", "--cache-dir", "none"}} {
		a := append(args, f.location(name))
		if args[0] == "mount" {
			a = append(a, mounttest.Mountpoint(t))
		}
		_, stderr, code := runBin(t, bin, time.Minute, a...)
		line := strings.TrimSpace(stderr)
		if code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "refuses the bearer token of "+f.profile) || strings.Contains(line, "dss-wrong-token") {
			t.Errorf("%s: exit %d, want one line about the refused token:\n%s", args[0], code, stderr)
		}
	}
}
