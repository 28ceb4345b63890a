package main

import (
	"os"
	"path/filepath"

	"github.com/deltafs/deltafs/storage/gcsstore"
	"github.com/deltafs/deltafs/storage/gcsstore/gcstest"
)

// The GCS workload, as the S3 one (bench/run/s3.go): the MNIST-shaped
// table in an in-process fake-gcs-server behind an in-process Toxiproxy
// adding 20 ms (-s3-latency-ms) to every answer, on loopback, mounted with
// an empty cache; a cold epoch with the plain reader next to the same
// table on local disk. It reports the GCS bytes fetched over the data
// files' bytes (target ≤ 1.1), over the decoded sample bytes, and reads
// per sample.
//
//	go run ./bench/run -only mnist-784B-gcs
//	go run ./bench/run -only mnist-784B-gcs -s3-rows 2000   # a quick smoke run

const gcsWorkload = "mnist-784B-gcs"

func init() { workloads = append(workloads, workload{gcsWorkload, gcsWorkloadRun}) }

// gcsStore names the GCS workload's figures and rows.
var gcsStore = remoteStore{workload: gcsWorkload, name: "GCS", readsFigure: "reads", readsRow: "reads", readsUnit: "reads"}

func gcsWorkloadRun(b *bench) error {
	name, table, dataBytes, err := b.remoteTable("s3-smoke-") // the same table as the S3 workload
	if err != nil {
		return err
	}
	fake, err := gcstest.ServeFake(nil)
	if err != nil {
		return err
	}
	defer fake.Stop()
	if _, err := gcstest.Upload(fake, "bench", name, table); err != nil {
		return err
	}
	proxy, err := latencyProxy(fake.Endpoint, *s3Latency)
	if err != nil {
		return err
	}
	defer proxy.Stop()
	// The emulator's way: STORAGE_EMULATOR_HOST, no credentials.
	os.Setenv(gcsstore.EmulatorEnv, filepath.Base(proxy.Endpoint))
	defer os.Unsetenv(gcsstore.EmulatorEnv)
	loc := "gs://bench/" + name
	b.note("%s: %s in fake-gcs-server behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", gcsWorkload, name, *s3Latency)
	return b.remoteEpochs(gcsStore, loc, table, dataBytes)
}
