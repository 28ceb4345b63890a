package main

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
)

// Azure conformance: every table of testdata/delta, uploaded to Azurite on
// 127.0.0.1, reads exactly like the same table on local disk through the
// real binary, with the locations users paste (abfss://, az://, wasbs://;
// Azurite serves the Blob API, which is where abfss:// tables are read)
// and credentials from AZURE_STORAGE_CONNECTION_STRING.

// azEnv clears the Azure credential chain of child processes and points
// it at endpoint through a connection string (unless endpoint is "").
func azEnv(t *testing.T, endpoint string) {
	t.Helper()
	aztest.ClearEnv(t)
	if endpoint != "" {
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", aztest.ConnString(endpoint))
	}
}

// azLocations are the location forms of a table in a container of the
// development account.
func azLocation(i int, container, path string) string {
	switch i % 3 {
	case 0:
		return "abfss://" + container + "@" + aztest.Account + ".dfs.core.windows.net/" + path
	case 1:
		return "az://" + container + "/" + path
	}
	return "wasbs://" + container + "@" + aztest.Account + ".blob.core.windows.net/" + path
}

// uploadAzTables uploads tables to the container, each under its name, and
// returns a local copy of each whose files carry the Last-Modified time of
// their blob (log timestamps are file times).
func uploadAzTables(t *testing.T, endpoint, containerName string, names []string) map[string]string {
	t.Helper()
	return mirrorTables(t, names,
		func(name, src string) int { return aztest.UploadDir(t, endpoint, containerName, name, src) },
		func() map[string]time.Time {
			c, err := aztest.Client(endpoint, containerName)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			times := map[string]time.Time{}
			for pg := c.NewListBlobsFlatPager(nil); pg.More(); {
				page, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatalf("list %s: %v", containerName, err)
				}
				for _, b := range page.Segment.BlobItems {
					times[*b.Name] = *b.Properties.LastModified
				}
			}
			return times
		})
}

// TestMountAzureDeltaTables: every table of testdata/delta in Azurite.
func TestMountAzureDeltaTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	srv := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, srv.Endpoint, "delta", false)
	azEnv(t, srv.Endpoint)
	names := deltaTableNames(t)
	local := uploadAzTables(t, srv.Endpoint, "delta", names)
	for i, name := range names {
		t.Run(name, func(t *testing.T) { compareRemoteTable(t, bin, azLocation(i, "delta", name), nil, name, local[name]) })
	}
}

// sasToken is a container SAS of the development account (read and list).
func sasToken(t *testing.T, endpoint, containerName string) string {
	t.Helper()
	c, err := aztest.Client(endpoint, containerName)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.GetSASURL(sas.ContainerPermissions{Read: true, List: true}, time.Now().Add(time.Hour), &container.GetSASURLOptions{StartTime: ptr(time.Now().Add(-time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.RawQuery
}

func ptr[T any](v T) *T { return &v }

// TestAzureCredentialsAndRefusals: each credential of the chain reads the
// table (connection string, account key, SAS token, anonymous on a public
// container); wrong credentials, a SAS for something else, a missing
// container, a missing table, anonymous access to a private container, no
// credentials at all, and an endpoint that is down each fail `deltafs log`
// within a bounded time, with exit status 1 and one error line naming the
// table and the cause. With --log-level debug, no line of any run holds
// the key or the SAS token.
func TestAzureCredentialsAndRefusals(t *testing.T) {
	bin := mounttest.Binary(t)
	srv := aztest.Start(t, aztest.Options{})
	for _, c := range []struct {
		name   string
		public bool
	}{{"tables", false}, {"public", true}} {
		aztest.CreateContainer(t, srv.Endpoint, c.name, c.public)
		aztest.UploadDir(t, srv.Endpoint, c.name, "basic", filepath.Join(testkit.Tables(), "dat-basic_append"))
	}
	token := sasToken(t, srv.Endpoint, "tables")
	sig := url.Values{}
	if v, err := url.ParseQuery(token); err == nil {
		sig = v
	}
	forged, _ := url.ParseQuery(token)
	forged.Set("sig", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	otherSAS := forged.Encode()
	wrongKey := "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="
	down := "http://127.0.0.1:1/" + aztest.Account
	secrets := []string{aztest.Key, wrongKey, sig.Get("sig"), url.QueryEscape(sig.Get("sig"))}

	abfss := "abfss://tables@" + aztest.Account + ".dfs.core.windows.net/basic"
	for _, tc := range []struct {
		name  string
		loc   string
		env   map[string]string
		flags []string
		want  []string // "" for success; else all in the line (lower case)
	}{
		{"connection string", abfss, map[string]string{"AZURE_STORAGE_CONNECTION_STRING": aztest.ConnString(srv.Endpoint)}, nil, nil},
		{"account key", "az://tables/basic", map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": aztest.Account, "AZURE_STORAGE_KEY": aztest.Key}, []string{"--azure-endpoint", srv.Endpoint}, nil},
		{"sas token", abfss, map[string]string{"AZURE_STORAGE_SAS_TOKEN": token}, []string{"--azure-endpoint", srv.Endpoint}, nil},
		{"sas connection string", "az://tables/basic", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "BlobEndpoint=" + srv.Endpoint + ";SharedAccessSignature=" + token}, nil, nil},
		{"anonymous public", "wasbs://public@" + aztest.Account + ".blob.core.windows.net/basic", nil, []string{"--azure-anonymous", "--azure-endpoint", srv.Endpoint}, nil},
		{"wrong key", abfss, map[string]string{"AZURE_STORAGE_CONNECTION_STRING": strings.Replace(aztest.ConnString(srv.Endpoint), aztest.Key, wrongKey, 1)}, nil, []string{"access denied", "check the credentials"}},
		{"wrong sas", abfss, map[string]string{"AZURE_STORAGE_SAS_TOKEN": otherSAS}, []string{"--azure-endpoint", srv.Endpoint}, []string{"credentials"}},
		{"missing container", "az://nope/basic", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": aztest.ConnString(srv.Endpoint)}, nil, []string{"container nope does not exist in account devstoreaccount1"}},
		{"missing table", "az://tables/nope", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": aztest.ConnString(srv.Endpoint)}, nil, []string{"not a delta table"}},
		{"anonymous private", "az://tables/basic", map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": aztest.Account}, []string{"--azure-anonymous", "--azure-endpoint", srv.Endpoint}, []string{"tables"}},
		{"other account", "abfss://tables@other.dfs.core.windows.net/basic", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": aztest.ConnString(srv.Endpoint)}, nil, []string{"connection_string is for account devstoreaccount1", "names account other"}},
		{"no account", "az://tables/basic", nil, nil, []string{"no storage account", "azure_storage_account_name"}},
		{"no credentials", "az://tables/basic", map[string]string{"AZURE_STORAGE_ACCOUNT_NAME": aztest.Account}, []string{"--azure-endpoint", srv.Endpoint}, []string{"no usable azure credentials"}},
		{"endpoint down", abfss, map[string]string{"AZURE_STORAGE_SAS_TOKEN": token}, []string{"--azure-endpoint", down}, []string{"cannot connect to the azure endpoint", "connection refused", "gave up after 3 attempts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			azEnv(t, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"log", "--json", tc.loc, "--azure-retries", "2", "--azure-timeout", "5s"}, tc.flags...)
			start := time.Now()
			stdout, stderr, code := runBin(t, bin, 60*time.Second, args...)
			el := time.Since(start)
			if tc.want == nil {
				if code != 0 || strings.Count(stdout, "\n") != 3 {
					t.Fatalf("exit %d, stdout %q, stderr %q: want the table's 3 versions", code, stdout, stderr)
				}
			} else {
				msg := requireErrorLine(t, stderr, code, tc.loc, 2, tc.want)
				if el > 30*time.Second {
					t.Errorf("failed after %v", el)
				}
				t.Logf("%v: %s", el.Round(time.Millisecond), msg)
			}
			// Again at debug level: no secret in any line.
			_, dbg, _ := runBin(t, bin, 60*time.Second, append(args, "--log-level", "debug")...)
			if tc.want == nil && !strings.Contains(dbg, "level=DEBUG") {
				t.Fatalf("no debug line at --log-level debug: %q", dbg)
			}
			for _, s := range secrets {
				if s != "" && strings.Contains(stdout+stderr+dbg, s) {
					t.Fatalf("output holds a secret: %q", dbg)
				}
			}
		})
	}
}
