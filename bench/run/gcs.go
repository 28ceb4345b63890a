package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/deltafs/deltafs/internal/gcstest"
	"github.com/deltafs/deltafs/storage/gcsstore"
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

func gcsFigures() []figure {
	var fs []figure
	for _, t := range []string{"1t", "8t"} {
		p := gcsWorkload + "/" + t + "/"
		fs = append(fs,
			figure{"GCS bytes fetched / bytes the samples need (data files), cold epoch (784 B, " + t + ")", p + "GCS bytes fetched / data file bytes", "", "≤ 1.1", atMost(1.1)},
			figure{"GCS bytes fetched / decoded sample bytes, cold epoch (784 B, " + t + ")", p + "GCS bytes fetched / decoded sample bytes", "", "report (compression)", nil},
			figure{"GCS reads per sample, cold epoch (784 B, " + t + ")", p + "GCS reads per sample", "", "few per page (report)", nil},
			figure{"cold epoch over GCS (20 ms) / local disk (784 B, " + t + ")", p + "deltafs cold over GCS", p + "deltafs cold local disk", "report", nil})
	}
	return fs
}

func gcsWorkloadRun(b *bench) error {
	name, table, dataBytes, err := b.s3Table() // the same table as the S3 workload
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
	proxy, err := cloudtest.NewProxy(fake.Endpoint)
	if err != nil {
		return err
	}
	defer proxy.Stop()
	if err := proxy.Add("latency", "latency", "downstream", 1, map[string]any{"latency": *s3Latency}); err != nil {
		return err
	}
	// The emulator's way: STORAGE_EMULATOR_HOST, no credentials.
	os.Setenv(gcsstore.EmulatorEnv, filepath.Base(proxy.Endpoint))
	defer os.Unsetenv(gcsstore.EmulatorEnv)
	loc := "gs://bench/" + name
	b.note("%s: %s in fake-gcs-server behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", gcsWorkload, name, *s3Latency)

	for r := 0; r < b.runs; r++ {
		for _, t := range []int{1, 8} {
			p := fmt.Sprintf("%s/%dt/", gcsWorkload, t)
			filesGCS, st, err := b.coldEpoch(loc, t)
			if err != nil {
				return err
			}
			filesLocal, _, err := b.coldEpoch(table, t)
			if err != nil {
				return err
			}
			b.add(p+"deltafs cold over GCS", "files/s", filesGCS)
			b.add(p+"deltafs cold local disk", "files/s", filesLocal)
			b.add(p+"GCS bytes fetched / data file bytes", "ratio", st.fetched/dataBytes)
			b.add(p+"GCS bytes fetched / decoded sample bytes", "ratio", st.fetched/st.sampleBytes)
			b.add(p+"GCS reads per sample", "reads", st.gets/st.files)
			b.add(p+"GCS retries", "requests", st.retries)
		}
	}
	return nil
}
