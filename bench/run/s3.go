package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/deltafs/deltafs/internal/cloudtest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/internal/s3test"
)

// The S3 workload: the MNIST-shaped table (60,000 × 784 B) in an
// in-process gofakes3 behind an in-process Toxiproxy adding 20 ms to every
// answer, on loopback, mounted with an empty cache; a cold epoch with the
// plain reader, next to the same table mounted from local disk in the same
// run. It reports what the epoch cost in S3 traffic (the store's own
// counters in .deltafs/stats): bytes fetched over the bytes the samples
// need from S3, the data files of the version (target ≤ 1.1 for a
// sequential epoch), over the decoded sample bytes, and GET requests per
// sample.
//
//	go run ./bench/run -only s3                  # this workload only
//	go run ./bench/run -only s3 -s3-rows 2000    # a quick smoke run

const s3Workload = "mnist-784B-s3"

var (
	s3Rows    = flag.Int("s3-rows", 0, "S3 workload: rows of a generated 784-byte table instead of the 60,000 MNIST training digits (a smoke run)")
	s3Latency = flag.Int("s3-latency-ms", 20, "S3 workload: latency Toxiproxy adds to every answer")
)

func init() { workloads = append(workloads, workload{s3Workload, s3WorkloadRun}) }

func s3Figures() []figure {
	var fs []figure
	for _, t := range []string{"1t", "8t"} {
		p := s3Workload + "/" + t + "/"
		fs = append(fs,
			figure{"S3 bytes fetched / bytes the samples need (data files), cold epoch (784 B, " + t + ")", p + "S3 bytes fetched / data file bytes", "", "≤ 1.1", atMost(1.1)},
			figure{"S3 bytes fetched / decoded sample bytes, cold epoch (784 B, " + t + ")", p + "S3 bytes fetched / decoded sample bytes", "", "report (compression)", nil},
			figure{"S3 GET requests per sample, cold epoch (784 B, " + t + ")", p + "S3 GETs per sample", "", "few per page (report)", nil},
			figure{"cold epoch over S3 (20 ms) / local disk (784 B, " + t + ")", p + "deltafs cold over S3", p + "deltafs cold local disk", "report", nil})
	}
	return fs
}

func s3WorkloadRun(b *bench) error {
	name, table, dataBytes, err := b.s3Table()
	if err != nil {
		return err
	}
	fake, err := s3test.ServeFake(nil)
	if err != nil {
		return err
	}
	defer fake.Stop()
	ctx := context.Background()
	if _, err := s3test.NewClient(fake.Endpoint).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
		return err
	}
	if _, err := s3test.Upload(ctx, fake.Endpoint, "bench", name, table); err != nil {
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
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": s3test.AccessKey, "AWS_SECRET_ACCESS_KEY": s3test.SecretKey,
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
	loc := "s3://bench/" + name
	s3flags := []string{"--s3-endpoint", proxy.Endpoint, "--s3-path-style", "--s3-region", s3test.Region}
	b.note("%s: %s in gofakes3 behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", s3Workload, name, *s3Latency)

	for r := 0; r < b.runs; r++ {
		for _, t := range []int{1, 8} {
			p := fmt.Sprintf("%s/%dt/", s3Workload, t)
			filesS3, st, err := b.coldEpoch(loc, t, s3flags...)
			if err != nil {
				return err
			}
			filesLocal, _, err := b.coldEpoch(table, t)
			if err != nil {
				return err
			}
			b.add(p+"deltafs cold over S3", "files/s", filesS3)
			b.add(p+"deltafs cold local disk", "files/s", filesLocal)
			b.add(p+"S3 bytes fetched / data file bytes", "ratio", st.fetched/dataBytes)
			b.add(p+"S3 bytes fetched / decoded sample bytes", "ratio", st.fetched/st.sampleBytes)
			b.add(p+"S3 GETs per sample", "GETs", st.gets/st.files)
			b.add(p+"S3 retries", "requests", st.retries)
		}
	}
	return nil
}

// s3Table imports the object store workloads' table (S3's and GCS's): the
// 60,000 MNIST training digits, or -s3-rows generated rows; dataBytes is
// the size of its data files, the bytes a full epoch needs.
func (b *bench) s3Table() (name, table string, dataBytes float64, err error) {
	var src string
	name, src = "mnist-train", "testdata/mnist/mnist-train.npy.gz"
	var extra []string
	if *s3Rows > 0 {
		name = "s3-smoke-" + strconv.Itoa(*s3Rows)
		src = filepath.Join(b.out, "npy", name+".npy")
		if err := writeNPY(src, *s3Rows, 784, func(i int, d []byte) {
			for j := range d {
				d[j] = byte(i*31 + j*7)
			}
		}); err != nil {
			return "", "", 0, err
		}
		extra = []string{"--rows-per-file", strconv.Itoa(max(*s3Rows/6, 1))}
	} else {
		extra = []string{"--rows-per-file", "10000"}
	}
	table, err = b.table(name, src, extra...)
	if err != nil {
		return "", "", 0, err
	}
	// The bytes a full epoch needs from S3: the data files (every live
	// row is read once). Fetching more means reading something twice or
	// reading what no sample needs. The samples' decoded bytes are smaller
	// or larger by the compression ratio, so they are reported apart.
	ents, err := os.ReadDir(table)
	if err != nil {
		return "", "", 0, err
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && filepath.Ext(e.Name()) == ".parquet" {
			dataBytes += float64(fi.Size())
		}
	}
	if dataBytes == 0 {
		return "", "", 0, fmt.Errorf("%s: no data files", table)
	}
	return name, table, dataBytes, nil
}

// epochCost is what one cold epoch over S3 read and cost.
type epochCost struct {
	files, sampleBytes     float64 // what the samples hold
	fetched, gets, retries float64 // the store's counters (0 for a local table)
}

// coldEpoch mounts table with an empty cache, reads every sample of shard
// 0 once with the plain reader on t threads, and returns files/s and the
// epoch's cost.
func (b *bench) coldEpoch(table string, threads int, flags ...string) (float64, epochCost, error) {
	var c epochCost
	cache, err := os.MkdirTemp(b.out, "cache-")
	if err != nil {
		return 0, c, err
	}
	defer os.RemoveAll(cache)
	m, err := b.mount(table, append(flags, "--cache-dir", cache)...)
	if err != nil {
		return 0, c, err
	}
	defer m.unmount()
	out, err := run(b.readloopBin, "-threads", strconv.Itoa(threads), filepath.Join(m.dir, "latest", "shard", "0"))
	if err != nil {
		return 0, c, err
	}
	var rl struct {
		Files     float64 `json:"files"`
		Bytes     float64 `json:"bytes"`
		FilesPerS float64 `json:"files_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &rl); err != nil {
		return 0, c, fmt.Errorf("readloop printed %q: %w", out, err)
	}
	if rl.Files == 0 || rl.Bytes == 0 {
		return 0, c, errors.New("readloop read nothing")
	}
	c.files, c.sampleBytes = rl.Files, rl.Bytes
	s, err := m.stats()
	if err != nil {
		return 0, c, err
	}
	for _, store := range []string{"s3", "azure", "gcs"} { // the object store's counters, when the table is in one
		if _, ok := s[store]; ok {
			c.fetched, c.gets, c.retries = number(s, store+".BytesFetched"), number(s, store+".Gets"), number(s, store+".Retries")
			if c.fetched <= 0 || c.gets <= 0 {
				return 0, c, fmt.Errorf("no %s counters in the stats: %v", store, s[store])
			}
		}
	}
	return rl.FilesPerS, c, nil
}
