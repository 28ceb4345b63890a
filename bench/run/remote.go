package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/deltafs/deltafs/storage/cloudtest"
)

// What the object store workloads (s3.go, gcs.go, azure.go) share: the
// table, a Toxiproxy adding latency, the cold epochs over the store next
// to local disk, and the figures and rows they report. Each workload only
// starts its emulator and says how deltafs reaches it.

// remoteStore names one object store workload's figures and rows.
type remoteStore struct {
	workload string // the rows' prefix, e.g. mnist-784B-s3
	name     string // the store in labels and rows: S3, GCS, Azure
	via      string // in the latency figure's label before "20 ms", e.g. "Azurite, "
	// How the store's reads are called: in the figure's label (readsFigure
	// per sample), in the row (readsRow per sample) and the row's unit.
	readsFigure, readsRow, readsUnit string
}

func (k remoteStore) figures() []figure {
	var fs []figure
	for _, t := range []string{"1t", "8t"} {
		p := k.workload + "/" + t + "/"
		fs = append(fs,
			figure{k.name + " bytes fetched / bytes the samples need (data files), cold epoch (784 B, " + t + ")", p + k.name + " bytes fetched / data file bytes", "", "≤ 1.1", atMost(1.1)},
			figure{k.name + " bytes fetched / decoded sample bytes, cold epoch (784 B, " + t + ")", p + k.name + " bytes fetched / decoded sample bytes", "", "report (compression)", nil},
			figure{k.name + " " + k.readsFigure + " per sample, cold epoch (784 B, " + t + ")", p + k.name + " " + k.readsRow + " per sample", "", "few per page (report)", nil},
			figure{"cold epoch over " + k.name + " (" + k.via + "20 ms) / local disk (784 B, " + t + ")", p + "deltafs cold over " + k.name, p + "deltafs cold local disk", "report", nil})
	}
	return fs
}

// remoteEpochs runs the cold epochs (b.runs times, on 1 and 8 threads) of
// loc, the table in the store, next to table on local disk, and adds the
// rows of k's figures.
func (b *bench) remoteEpochs(k remoteStore, loc, table string, dataBytes float64, flags ...string) error {
	for r := 0; r < b.runs; r++ {
		for _, t := range []int{1, 8} {
			p := fmt.Sprintf("%s/%dt/", k.workload, t)
			filesRemote, st, err := b.coldEpoch(loc, t, flags...)
			if err != nil {
				return err
			}
			filesLocal, _, err := b.coldEpoch(table, t)
			if err != nil {
				return err
			}
			b.add(p+"deltafs cold over "+k.name, "files/s", filesRemote)
			b.add(p+"deltafs cold local disk", "files/s", filesLocal)
			b.add(p+k.name+" bytes fetched / data file bytes", "ratio", st.fetched/dataBytes)
			b.add(p+k.name+" bytes fetched / decoded sample bytes", "ratio", st.fetched/st.sampleBytes)
			b.add(p+k.name+" "+k.readsRow+" per sample", k.readsUnit, st.gets/st.files)
			b.add(p+k.name+" retries", "requests", st.retries)
		}
	}
	return nil
}

// latencyProxy is a Toxiproxy in front of upstream adding ms to every
// answer.
func latencyProxy(upstream string, ms int) (*cloudtest.Proxy, error) {
	proxy, err := cloudtest.NewProxy(upstream)
	if err != nil {
		return nil, err
	}
	if err := proxy.Add("latency", "latency", "downstream", 1, map[string]any{"latency": ms}); err != nil {
		proxy.Stop()
		return nil, err
	}
	return proxy, nil
}

// remoteTable imports the object store workloads' table: the 60,000 MNIST
// training digits, or -s3-rows generated rows named smoke+rows; dataBytes
// is the size of its data files, the bytes a full epoch needs.
func (b *bench) remoteTable(smoke string) (name, table string, dataBytes float64, err error) {
	var src string
	name, src = "mnist-train", "testdata/mnist/mnist-train.npy.gz"
	var extra []string
	if *s3Rows > 0 {
		name = smoke + strconv.Itoa(*s3Rows)
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
	// The bytes a full epoch needs from the store: the data files (every live
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

// epochCost is what one cold epoch over an object store read and cost.
type epochCost struct {
	files, sampleBytes     float64 // what the samples hold
	fetched, gets, retries float64 // the store's counters (0 for a local table)
}

// coldEpoch mounts table with an empty cache, reads every sample of shard
// 0 once with the plain reader on t threads, and returns files/s and the
// epoch's cost.
func (b *bench) coldEpoch(table string, threads int, flags ...string) (float64, epochCost, error) {
	var c epochCost
	m, done, err := b.mountCold(table, flags...)
	if err != nil {
		return 0, c, err
	}
	defer done()
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
