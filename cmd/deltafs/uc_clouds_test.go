package main

import (
	"testing"
	"time"

	"github.com/deltafs/deltafs/catalog/unity/unitytest"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/storage/azstore/aztest"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
)

// Tables by name on Azure and GCS: the catalog (catalog/unity/unitytest) vends
// a real SAS for Azurite, checked by Azurite and by a proxy that refuses
// any SAS the catalog did not vend or that has expired, and an OAuth token
// that a middleware around fake-gcs-server requires on every request and
// refuses once expired. No Azure or Google credentials are in the
// environment: the vended ones are the only way in.

// ucCloud is a catalog with tables on one cloud.
type ucCloud struct {
	uc    *unitytest.Server
	flags []string          // the endpoint flag of the cloud
	local map[string]string // table name -> local copy with the objects' times
}

// startUCS3 is startUC (gofakes3 checking every request's session) as a
// ucCloud.
func startUCS3(t *testing.T, lifetime time.Duration, names []string) *ucCloud {
	t.Helper()
	f := startUC(t, lifetime, names)
	return &ucCloud{uc: f.uc, flags: s3Flags(f.endpoint), local: f.local}
}

// startUCAzure uploads tables to Azurite under abfss:// locations that
// the catalog serves as main.default.<name>.
func startUCAzure(t *testing.T, lifetime time.Duration, names []string) *ucCloud {
	t.Helper()
	srv := aztest.Start(t, aztest.Options{})
	aztest.CreateContainer(t, srv.Endpoint, "lake", false)
	local := uploadAzTables(t, srv.Endpoint, "lake", names)
	uc := unitytest.Start(t, lifetime, "", "")
	uc.VendAzure(aztest.Account, aztest.Key)
	for _, name := range names {
		uc.AddTable(ucName(name), "abfss://lake@"+aztest.Account+".dfs.core.windows.net/"+name)
	}
	azEnv(t, "")
	ucEnv(t, uc)
	return &ucCloud{uc: uc, flags: []string{"--azure-endpoint", uc.AzureProxy(t, srv.Endpoint)}, local: local}
}

// startUCGCS uploads tables to fake-gcs-server under gs:// locations that
// the catalog serves as main.default.<name>.
func startUCGCS(t *testing.T, lifetime time.Duration, names []string) *ucCloud {
	t.Helper()
	uc := unitytest.Start(t, lifetime, "", "")
	f := gcstest.NewFake(t, uc.WrapGCS)
	local := uploadGCSTables(t, f, "lake", names)
	for _, name := range names {
		uc.AddTable(ucName(name), "gs://lake/"+name)
	}
	gcstest.Env(t)
	ucEnv(t, uc)
	return &ucCloud{uc: uc, flags: []string{"--gcs-endpoint", f.Endpoint}, local: local}
}

// ucClouds are the clouds the catalog's tests run on. Credentials live
// 3 s in TestUCCredentialRefresh: within it, at least minSessions vended
// credentials reach storage, and at least minSecrets secrets are vended
// (an AWS session has three, a SAS or an OAuth token one).
var ucClouds = []struct {
	name        string
	start       func(*testing.T, time.Duration, []string) *ucCloud
	stats       string // the backend's key in .deltafs/stats
	minSessions int
	minSecrets  int
}{
	{"s3", startUCS3, `"s3"`, 4, 9},
	{"azure", startUCAzure, `"azure"`, 3, 4},
	{"gcs", startUCGCS, `"gcs"`, 3, 4},
}

// TestUCCloudTables: tables by name on S3, Azure and GCS equal the same
// tables by path (log --json, every version's sample files), every
// storage request carrying vended credentials.
func TestUCCloudTables(t *testing.T) {
	mounttest.RequireFUSE(t)
	bin := mounttest.Binary(t)
	names := []string{"dat-with_checkpoint", "dat-basic_partitioned"}
	for _, cloud := range ucClouds {
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 30*time.Second, names)
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					compareRemoteTable(t, bin, "uc://"+ucName(name), c.flags, name, c.local[name])
				})
			}
			if e, r := c.uc.Expired.Load(), c.uc.Refused.Load(); e != 0 || r != 0 {
				t.Errorf("storage refused %d requests as expired, %d otherwise", e, r)
			}
			if c.uc.Accepted.Load() == 0 || c.uc.SessionsUsed() == 0 {
				t.Error("no storage request carried vended credentials")
			}
		})
	}
}
