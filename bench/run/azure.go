package main

import (
	"context"
	"flag"
	"os"
	"strconv"

	"github.com/deltafs/deltafs/storage/azstore/aztest"
)

// The Azure workload: the S3 workload's table (MNIST-shaped, 60,000 × 784
// B) in Azurite behind an in-process Toxiproxy adding 20 ms to every
// answer, on loopback, read as abfss:// with a connection string, mounted
// with an empty cache; a cold epoch with the plain reader, next to the
// same table mounted from local disk in the same run. It reports the
// Azure store's own counters (.deltafs/stats "azure"): bytes fetched over
// the data files' bytes (target ≤ 1.1), over the decoded sample bytes, and
// GETs per sample.
//
//	go run ./bench/run -only azure                    # this workload only
//	go run ./bench/run -only azure -s3-rows 2000      # a quick smoke run (-s3-rows sizes both)

const azureWorkload = "mnist-784B-azure"

var azureLatency = flag.Int("azure-latency-ms", 20, "Azure workload: latency Toxiproxy adds to every answer")

func init() { workloads = append(workloads, workload{azureWorkload, azureWorkloadRun}) }

// azureStore names the Azure workload's figures and rows.
var azureStore = remoteStore{workload: azureWorkload, name: "Azure", via: "Azurite, ", readsFigure: "GET requests", readsRow: "GETs", readsUnit: "GETs"}

func azureWorkloadRun(b *bench) error {
	name, table, dataBytes, err := b.remoteTable("azure-smoke-")
	if err != nil {
		return err
	}
	srv, err := aztest.New("")
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	if err := aztest.Create(ctx, srv.Endpoint, "bench", false); err != nil {
		return err
	}
	if _, err := aztest.Upload(ctx, srv.Endpoint, "bench", name, table); err != nil {
		return err
	}
	proxy, err := latencyProxy("127.0.0.1:"+strconv.Itoa(srv.Port), *azureLatency)
	if err != nil {
		return err
	}
	defer proxy.Stop()
	os.Setenv("AZURE_STORAGE_CONNECTION_STRING", aztest.ConnString(proxy.Endpoint+"/"+aztest.Account))
	loc := "abfss://bench@" + aztest.Account + ".dfs.core.windows.net/" + name
	b.note("%s: %s in Azurite behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", azureWorkload, name, *azureLatency)
	return b.remoteEpochs(azureStore, loc, table, dataBytes)
}
