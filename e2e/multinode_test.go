package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltafs/deltafs/internal/testkit"
	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/storage/cloudtest"
	"github.com/deltafs/deltafs/storage/s3store/s3test"
	"github.com/deltafs/deltafs/table"
)

// A multi-node DDP run, simulated on this machine: each "node" its own
// deltafs mount of the same table on an S3 server, through its own
// Toxiproxy with 20 ms of latency, its own cache directory, and its own
// torch.distributed.run agent (--nnodes 2 --nproc_per_node 2, gloo);
// rank r reads only version/N/shard/r. The object store is the only thing
// the nodes share.

const (
	nodes        = 2
	ranksPerNode = 2
	s3Latency    = 20 // ms, each way
)

// cluster is the S3 table and one mount per node.
type cluster struct {
	bin      string
	endpoint string
	table    string
	mounts   []string
	proxies  []*cloudtest.Proxy
}

func startCluster(t *testing.T, layout string, flags ...string) *cluster {
	t.Helper()
	bin := buildDeltafs(t)
	endpoint := s3test.StartGofakes3(t)
	s3test.CreateBucket(t, endpoint, "train")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c := &cluster{bin: bin, endpoint: endpoint, table: "s3://train/mnist"}
	run(t, bin, "import", testkit.MNISTTest, c.table, "--rows-per-file", "1000", "--s3-endpoint", endpoint, "--s3-path-style", "--s3-region", s3test.Region)
	for n := 0; n < nodes; n++ {
		p := cloudtest.StartProxy(t, endpoint)
		for _, stream := range []string{"upstream", "downstream"} {
			if err := p.Add(fmt.Sprintf("latency-%s", stream), "latency", stream, 1, map[string]any{"latency": s3Latency}); err != nil {
				t.Fatal(err)
			}
		}
		c.proxies = append(c.proxies, p)
		args := append([]string{"--s3-endpoint", p.Endpoint, "--s3-path-style", "--s3-region", s3test.Region,
			"--image", "28x28", "--class-column", "label", "--shards", fmt.Sprint(nodes * ranksPerNode), "--shard-layout", layout,
			"--cache-dir", filepath.Join(t.TempDir(), fmt.Sprintf("node%d-cache", n))}, flags...)
		c.mounts = append(c.mounts, mount(t, bin, c.table, args...))
	}
	return c
}

// freePort is a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// node is one node's torch.distributed.run.
type node struct {
	cmd *exec.Cmd
	out bytes.Buffer
	err chan error
}

// train starts every node's agent with the script's args and returns them.
func (c *cluster) train(t *testing.T, python string, limit time.Duration, args ...string) []*node {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	var ns []*node
	for k := 0; k < nodes; k++ {
		n := &node{err: make(chan error, 1)}
		full := append([]string{"-m", "torch.distributed.run", "--nnodes", fmt.Sprint(nodes), "--nproc_per_node", fmt.Sprint(ranksPerNode),
			"--node_rank", fmt.Sprint(k), "--master_addr", "127.0.0.1", "--master_port", fmt.Sprint(port),
			"--redirects", "1", "--tee", "1", "--log_dir", t.TempDir(),
			"e2e/testdata/multinode.py", c.mounts[k]}, args...)
		n.cmd = exec.CommandContext(ctx, python, full...)
		n.cmd.Dir = ".."
		n.cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
		n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { n.err <- n.cmd.Wait() }()
		ns = append(ns, n)
	}
	return ns
}

// stats is a mount's .deltafs/stats.
func stats(t *testing.T, mnt string) map[string]any {
	b, err := os.ReadFile(filepath.Join(mnt, ".deltafs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// maxOverFetch bounds what a node fetches of the data files, against the
// bytes its shards need (needBytes): each file its shards need once, its
// tail once, plus the --image check's one page of the first file.
const maxOverFetch = 1.2

// needBytes is what each node's shards need of version 0's data files,
// computed from the log as the package doc of sample places shards: with
// a contiguous layout shard k is rows [k*N/S, (k+1)*N/S) in append order
// (modificationTime, then path), and a node needs every file one of its
// shards' ranges overlaps; with a balanced one every shard holds rows of
// every file, and each node needs them all.
func (c *cluster) needBytes(t *testing.T, layout string) []int64 {
	t.Helper()
	ctx := context.Background()
	tb, err := table.Open(ctx, table.Options{Location: c.table,
		Storage: storage.Options{S3: storage.S3Options{Endpoint: c.endpoint, Region: s3test.Region, PathStyle: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	snap, err := tb.Log.Snapshot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := slices.Clone(snap.Files)
	slices.SortFunc(files, func(a, b *snapshot.AddFile) int {
		return cmp.Or(cmp.Compare(a.ModificationTime, b.ModificationTime), cmp.Compare(a.Path, b.Path))
	})
	var total int64
	for _, f := range files {
		total += f.LiveRows()
	}
	shards := int64(nodes * ranksPerNode)
	need := make([]int64, nodes)
	for n := range need {
		lo, hi := total*int64(n*ranksPerNode)/shards, total*int64((n+1)*ranksPerNode)/shards
		var at int64
		for _, f := range files {
			if layout == "balanced" || at < hi && at+f.LiveRows() > lo {
				need[n] += f.Size
			}
			at += f.LiveRows()
		}
	}
	return need
}

var firstBatch = regexp.MustCompile(`rank (\d+): first batch after ([0-9.]+) s`)

// TestMultiNodeDDP: two epochs over version 0 while a new version is
// committed mid-epoch; every epoch's union over the ranks of the two nodes
// is every sample exactly once, of version 0; with a contiguous layout no
// node fetches more than maxOverFetch times the data-file bytes its shards
// need. Each node's fetched and needed bytes and first-batch latency are
// logged (and written to the file DELTAFS_MULTINODE_REPORT names, for
// bench/RESULTS.md).
func TestMultiNodeDDP(t *testing.T) {
	python := needTorchvision(t)
	layouts := []string{"contiguous"}
	if os.Getenv("DELTAFS_MULTINODE_REPORT") != "" {
		layouts = append(layouts, "balanced")
	}
	var report strings.Builder
	for _, layout := range layouts {
		t.Run(layout, func(t *testing.T) {
			c := startCluster(t, layout)
			pause := filepath.Join(t.TempDir(), "go-on")
			ns := c.train(t, python, 4*time.Minute, "--epochs", "2", "--expect", "10000", "--pause", pause)
			// Wait for every rank's first batch, then commit version 1.
			deadline := time.Now().Add(3 * time.Minute)
			for {
				n := 0
				for _, nd := range ns {
					n += len(firstBatch.FindAllString(nd.out.String(), -1))
				}
				if n == nodes*ranksPerNode {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not every rank read a first batch:\n%s\n%s", ns[0].out.String(), ns[1].out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			run(t, c.bin, "import", testkit.MNISTTest, c.table, "--rows-per-file", "5000", "--s3-endpoint", c.endpoint, "--s3-path-style", "--s3-region", s3test.Region)
			if err := os.WriteFile(pause, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for k, nd := range ns {
				if err := <-nd.err; err != nil {
					t.Fatalf("node %d: %v\n%s", k, err, nd.out.String())
				}
			}
			out := ns[0].out.String()
			for e := 1; e <= 2; e++ {
				want := fmt.Sprintf("epoch %d: version 0, 10000 samples read by %d ranks, 10000 distinct, exactly once", e, nodes*ranksPerNode)
				if !strings.Contains(out, want) {
					t.Errorf("node 0 does not report %q:\n%s", want, out)
				}
			}
			// The new commit reached the mounts (latest moved), not the run.
			for k, mnt := range c.mounts {
				deadline := time.Now().Add(30 * time.Second)
				for {
					target, _ := os.Readlink(filepath.Join(mnt, "latest"))
					if target == "version/1" {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("node %d: latest is %q after the commit, want version/1", k, target)
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			// What each node fetched of the data files, against what its
			// shards need: each file once (with a contiguous layout, no
			// other node's files, no other rank's pages read ahead).
			need := c.needBytes(t, layout)
			fmt.Fprintf(&report, "| %s |", layout)
			for k, mnt := range c.mounts {
				st := stats(t, mnt)["storage"].(map[string]any)
				fetched := st["data_file_bytes_read"].(float64)
				ratio := fetched / float64(need[k])
				lat := []string{}
				for _, m := range firstBatch.FindAllStringSubmatch(ns[k].out.String(), -1) {
					lat = append(lat, "rank "+m[1]+" "+m[2]+" s")
				}
				t.Logf("%s layout, node %d: %.2f MiB of data files fetched, %.2f MiB needed (%.2fx), first batch: %s",
					layout, k, fetched/(1<<20), float64(need[k])/(1<<20), ratio, strings.Join(lat, ", "))
				if layout == "contiguous" && ratio > maxOverFetch {
					t.Errorf("node %d fetched %.0f bytes of data files, %.2fx the %d its shards need (want at most %.1fx)", k, fetched, ratio, need[k], maxOverFetch)
				}
				fmt.Fprintf(&report, " %.2f MiB of %.2f MiB needed (%.2fx); %s |", fetched/(1<<20), float64(need[k])/(1<<20), ratio, strings.Join(lat, ", "))
			}
			report.WriteString("\n")
		})
	}
	if path := os.Getenv("DELTAFS_MULTINODE_REPORT"); path != "" && !t.Failed() {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMultiNodeMountKilled: one node's mount server is killed mid-epoch;
// that node's ranks fail with an I/O error (the job fails loudly, within
// the collective timeout), and no rank reports a complete epoch.
func TestMultiNodeMountKilled(t *testing.T) {
	python := needTorchvision(t)
	// --prefill 0: the prefill would push the whole (small) shard into the
	// page cache before the kill, and the ranks would finish on its true
	// bytes; here the reads after the kill must need the server.
	c := startCluster(t, "contiguous", "--prefill", "0")
	pause := filepath.Join(t.TempDir(), "go-on")
	ns := c.train(t, python, 4*time.Minute, "--epochs", "1", "--expect", "10000", "--pause", pause, "--timeout", "20")
	deadline := time.Now().Add(3 * time.Minute)
	for len(firstBatch.FindAllString(ns[1].out.String(), -1)) < ranksPerNode {
		if time.Now().After(deadline) {
			t.Fatalf("node 1's ranks read no first batch:\n%s", ns[1].out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The server of node 1's mount: the deltafs process serving it.
	out, err := exec.Command("pgrep", "-f", "deltafs mount "+c.table+" "+c.mounts[1]).Output()
	if err != nil {
		t.Fatalf("no server for %s: %v", c.mounts[1], err)
	}
	for _, pid := range strings.Fields(string(out)) {
		var p int
		fmt.Sscan(pid, &p)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if err := os.WriteFile(pause, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for k, nd := range ns {
		if err := <-nd.err; err == nil {
			t.Errorf("node %d's run succeeded after node 1's mount died:\n%s", k, nd.out.String())
		}
	}
	n1 := ns[1].out.String()
	if !strings.Contains(n1, "Transport endpoint is not connected") && !strings.Contains(n1, "Input/output error") {
		t.Errorf("node 1's ranks did not fail with an I/O error:\n%s", n1)
	}
	for k, nd := range ns {
		if strings.Contains(nd.out.String(), "exactly once") {
			t.Errorf("node %d reports a complete epoch although node 1's mount died:\n%s", k, nd.out.String())
		}
	}
}
