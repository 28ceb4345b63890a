package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/deltafs/deltafs/internal/aztest"
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

func azureFigures() []figure {
	var fs []figure
	for _, t := range []string{"1t", "8t"} {
		p := azureWorkload + "/" + t + "/"
		fs = append(fs,
			figure{"Azure bytes fetched / bytes the samples need (data files), cold epoch (784 B, " + t + ")", p + "Azure bytes fetched / data file bytes", "", "≤ 1.1", atMost(1.1)},
			figure{"Azure bytes fetched / decoded sample bytes, cold epoch (784 B, " + t + ")", p + "Azure bytes fetched / decoded sample bytes", "", "report (compression)", nil},
			figure{"Azure GET requests per sample, cold epoch (784 B, " + t + ")", p + "Azure GETs per sample", "", "few per page (report)", nil},
			figure{"cold epoch over Azure (Azurite, 20 ms) / local disk (784 B, " + t + ")", p + "deltafs cold over Azure", p + "deltafs cold local disk", "report", nil})
	}
	return fs
}

func azureWorkloadRun(b *bench) error {
	name, src := "mnist-train", "testdata/mnist/mnist-train.npy.gz"
	extra := []string{"--rows-per-file", "10000"}
	if *s3Rows > 0 {
		name = "azure-smoke-" + strconv.Itoa(*s3Rows)
		src = filepath.Join(b.out, "npy", name+".npy")
		if err := writeNPY(src, *s3Rows, 784, func(i int, d []byte) {
			for j := range d {
				d[j] = byte(i*31 + j*7)
			}
		}); err != nil {
			return err
		}
		extra = []string{"--rows-per-file", strconv.Itoa(max(*s3Rows/6, 1))}
	}
	table, err := b.table(name, src, extra...)
	if err != nil {
		return err
	}
	var dataBytes float64
	ents, err := os.ReadDir(table)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && filepath.Ext(e.Name()) == ".parquet" {
			dataBytes += float64(fi.Size())
		}
	}
	if dataBytes == 0 {
		return fmt.Errorf("%s: no data files", table)
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
	proxy, err := cloudtest.NewProxy("127.0.0.1:" + strconv.Itoa(srv.Port))
	if err != nil {
		return err
	}
	defer proxy.Stop()
	if err := proxy.Add("latency", "latency", "downstream", 1, map[string]any{"latency": *azureLatency}); err != nil {
		return err
	}
	os.Setenv("AZURE_STORAGE_CONNECTION_STRING", aztest.ConnString(proxy.Endpoint+"/"+aztest.Account))
	loc := "abfss://bench@" + aztest.Account + ".dfs.core.windows.net/" + name
	b.note("%s: %s in Azurite behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", azureWorkload, name, *azureLatency)

	for r := 0; r < b.runs; r++ {
		for _, t := range []int{1, 8} {
			p := fmt.Sprintf("%s/%dt/", azureWorkload, t)
			filesAz, st, err := b.coldEpoch(loc, t)
			if err != nil {
				return err
			}
			filesLocal, _, err := b.coldEpoch(table, t)
			if err != nil {
				return err
			}
			b.add(p+"deltafs cold over Azure", "files/s", filesAz)
			b.add(p+"deltafs cold local disk", "files/s", filesLocal)
			b.add(p+"Azure bytes fetched / data file bytes", "ratio", st.fetched/dataBytes)
			b.add(p+"Azure bytes fetched / decoded sample bytes", "ratio", st.fetched/st.sampleBytes)
			b.add(p+"Azure GETs per sample", "GETs", st.gets/st.files)
			b.add(p+"Azure retries", "requests", st.retries)
		}
	}
	return nil
}
