package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
)

// TestUCCatalogManaged: a catalog-managed table (writer/'s six versions,
// reader 3 and writer 7 with catalogManaged and inCommitTimestamp) whose
// commits from version 2 on are staged in _delta_log/_staged_commits/ and
// ratified in the catalog up to version 4 (version 5 staged, not yet
// ratified), in S3 behind vended sessions. Through uc:// it reads as the
// same table without the feature by path: log --json, cat of every
// version and at a version's time, the mount's sample files; by path it
// is refused in one line. Mounted, a newly ratified version 5 appears at
// the next refresh; once the table is dropped from the catalog, reads
// fail with EIO and the mount says why in one warning.
func TestUCCatalogManaged(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	uc := unitytest.Start(t, time.Minute, s3test.AccessKey, s3test.SecretKey)
	endpoint := s3test.NewFake(t, uc.WrapS3).Endpoint
	dir, ref := unitytest.ManagedTable(t, t.TempDir(), 6)
	commits, latest := unitytest.StageCommits(t, dir, 2)
	loc := unitytest.ManagedLocation("lake")
	u, _ := url.Parse(loc)
	if s3test.UploadDir(t, endpoint, "lake", strings.TrimPrefix(u.Path, "/"), dir) == 0 {
		t.Fatal("nothing uploaded")
	}
	const name = "main.default.managed"
	uc.AddTable(name, loc)
	uc.SetCommits(name, commits[:3], 4)
	uc.CloseAdmin()
	ucEnv(t, uc)
	table := "uc://" + name
	flags := s3Flags(endpoint)

	// By path: refused, naming the feature and uc://.
	_, stderr, code := runBin(t, bin, time.Minute, "log", dir)
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `reader feature "catalogManaged" is not supported`) || !strings.Contains(stderr, "uc://CATALOG.SCHEMA.TABLE") {
		t.Fatalf("by path: exit %d, %q", code, stderr)
	}

	// A catalog without the Delta REST API: the log alone, refused by
	// name; a failing loadTable: refused in one line.
	for status, want := range map[int64]string{404: `reader feature "catalogManaged" is not supported; its catalog has no Delta REST API (loadTable) to give the table's newest commits`,
		400: "loading the table's commits at " + uc.URL + "/api/2.1/unity-catalog (HTTP 400 InternalServerErrorException: the catalog is failing)"} {
		uc.LoadStatus.Store(status)
		_, stderr, code := runBin(t, bin, time.Minute, append([]string{"log", table}, flags...)...)
		if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "deltafs: "+table) || !strings.Contains(stderr, want) {
			t.Fatalf("loadTable answering %d: exit %d, %q, want one line saying %q", status, code, stderr, want)
		}
	}
	uc.LoadStatus.Store(0)

	// log --json: versions 0..4, as the reference's.
	refLog, refErr, code := runBin(t, bin, time.Minute, "log", "--json", ref)
	if code != 0 {
		t.Fatal(refErr)
	}
	refLines := strings.SplitAfter(refLog, "\n")
	if len(refLines) != 7 {
		t.Fatalf("reference log: %q", refLog)
	}
	got, stderr, code := runBin(t, bin, time.Minute, append([]string{"log", "--json", table}, flags...)...)
	if want := strings.Join(refLines[:5], ""); code != 0 || got != want {
		t.Fatalf("log --json through the catalog (exit %d, %s):\n%s\nwant:\n%s", code, stderr, got, want)
	}
	// cat of every version, and at version 3's time.
	for _, args := range [][]string{{"--version", "0"}, {"--version", "2"}, {"--version", "3"}, {"--version", "4"}, {"--at", fmt.Sprint(time.Date(2025, 6, 1, 12, 0, 3, 500e6, time.UTC).UnixMilli())}} {
		want, _, wcode := runBin(t, bin, time.Minute, append([]string{"cat", ref}, args...)...)
		got, stderr, code := runBin(t, bin, time.Minute, append(append([]string{"cat", table}, args...), flags...)...)
		if code != 0 || wcode != 0 || got != want || want == "" {
			t.Fatalf("cat %v (exit %d, %s):\n%s\nwant (exit %d):\n%s", args, code, stderr, got, wcode, want)
		}
	}

	refTree, refused := mountedTree(t, bin, ref)
	if refused != "" || len(refTree) != 6 {
		t.Fatalf("reference: %d versions, %s", len(refTree), refused)
	}
	m := mounttest.Start(t, bin, table, append([]string{"--data-column", "-", "--shards", "2", "--cache-dir", "none", "--mem-cache", "0", "--refresh", "1s"}, flags...)...)
	vs, err := os.ReadDir(filepath.Join(m.Dir, "version"))
	if err != nil || len(vs) != 5 {
		t.Fatalf("%d versions mounted, want 5: %v", len(vs), err)
	}
	for _, v := range vs {
		if got, want := versionTree(t, m.Dir, v.Name()), refTree[v.Name()]; strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) == 0 {
			t.Fatalf("version %s: sample files differ\nuc:   %q\npath: %q", v.Name(), got, want)
		}
	}

	// Version 5 ratified: latest moves there at the next refresh.
	uc.SetCommits(name, commits, latest)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if target, _ := os.Readlink(filepath.Join(m.Dir, "latest")); target == "version/5" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("latest did not move to the newly ratified version 5:\n%s", m.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, want := versionTree(t, m.Dir, "5"), refTree["5"]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("version 5: sample files differ\nuc:   %q\npath: %q", got, want)
	}

	// Dropped while mounted: reads that reach storage fail with EIO
	// after the next refresh (what the mount's caches hold is still the
	// true bytes).
	shard := filepath.Join(m.Dir, "version", "5", "shard", "0")
	names := samplesUnder(t, shard)
	want := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(shard, n))
		if err != nil {
			t.Fatal(err)
		}
		want[n] = string(b)
	}
	uc.Drop(name)
	dropped := time.Now()
	for {
		_, err := readUncached(filepath.Join(shard, names[0]))
		if errors.Is(err, syscall.EIO) {
			break
		}
		if err != nil {
			t.Fatalf("read after the drop: %v, want EIO", err)
		}
		if time.Since(dropped) > 15*time.Second {
			t.Fatal("reads still work 15 s after the table was dropped")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range names {
		if b, err := readUncached(filepath.Join(shard, n)); !errors.Is(err, syscall.EIO) && (err != nil || string(b) != want[n]) {
			t.Fatalf("%s after the drop: %v, want EIO or the true bytes", n, err)
		}
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	log := m.Log()
	if n := strings.Count(log, "the catalog no longer has the table (dropped?)"); n < 1 || strings.Count(log, "listing the table's versions failed") != 1 {
		t.Fatalf("want one warning about the dropped table:\n%s", log)
	}
	t.Logf("EIO %v after the drop", time.Since(dropped).Round(time.Millisecond))
}
