package main

import (
	"context"
	"flag"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltafs/deltafs/storage/s3store/s3test"
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

// s3Store names the S3 workload's figures and rows.
var s3Store = remoteStore{workload: s3Workload, name: "S3", readsFigure: "GET requests", readsRow: "GETs", readsUnit: "GETs"}

func s3WorkloadRun(b *bench) error {
	name, table, dataBytes, err := b.remoteTable("s3-smoke-")
	if err != nil {
		return err
	}
	s3, stop, err := b.s3Table(name, table)
	if err != nil {
		return err
	}
	defer stop()
	b.note("%s: %s in gofakes3 behind Toxiproxy adding %d ms to every answer, on loopback; cold epochs on fresh mounts with an empty cache", s3Workload, name, *s3Latency)
	return b.remoteEpochs(s3Store, s3[0], table, dataBytes, s3[1:]...)
}

// s3Table uploads the local table to an in-process gofakes3 as bench/name,
// behind a Toxiproxy adding -s3-latency-ms to every answer, sets the
// credentials the mount reads from the environment, and returns the
// table's location followed by the mount flags that reach it, and what
// stops the servers.
func (b *bench) s3Table(name, table string) (locFlags []string, stop func(), err error) {
	fake, err := s3test.ServeFake(nil)
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	if _, err := s3test.NewClient(fake.Endpoint).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
		fake.Stop()
		return nil, nil, err
	}
	if _, err := s3test.Upload(ctx, fake.Endpoint, "bench", name, table); err != nil {
		fake.Stop()
		return nil, nil, err
	}
	proxy, err := latencyProxy(fake.Endpoint, *s3Latency)
	if err != nil {
		fake.Stop()
		return nil, nil, err
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": s3test.AccessKey, "AWS_SECRET_ACCESS_KEY": s3test.SecretKey,
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
	return []string{"s3://bench/" + name, "--s3-endpoint", proxy.Endpoint, "--s3-path-style", "--s3-region", s3test.Region},
		func() { proxy.Stop(); fake.Stop() }, nil
}
