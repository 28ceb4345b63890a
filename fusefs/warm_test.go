package fusefs_test

import (
	"context"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deltafs/deltafs/fusefs"
	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/sample"
	"github.com/deltafs/deltafs/sample/sampletest"
)

// opcodeCounter counts the FUSE requests the server receives, by opcode,
// from go-fuse's debug lines ("rx 12: LOOKUP n1 ...").
type opcodeCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

var rxLine = regexp.MustCompile(`\brx \d+: ([A-Z_]+)`)

func (c *opcodeCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range rxLine.FindAllSubmatch(p, -1) {
		c.counts[string(m[1])]++
	}
	return len(p), nil
}

// take returns the counts so far and starts again from zero.
func (c *opcodeCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// TestWarmPassNoRequests checks the claim of the package doc: a second
// epoch over a version (walk the shard, open, stat and read every sample,
// close) is served by the kernel's caches and sends the server no OPEN,
// READ, LOOKUP, GETATTR, FLUSH or GETXATTR request. The first epoch must
// send READs (else the counter counts nothing).
func TestWarmPassNoRequests(t *testing.T) {
	tbl := sampletest.New("id:long", "label:integer", "pixels:binary")
	tbl.Commit(t0, "WRITE", []sampletest.Add{{Path: "a.parquet", Rows: digits(150, 0)}, {Path: "b.parquet", Rows: digits(150, 1000)}}, nil, nil)
	s, err := sample.New(tbl.Options(sample.Spec{Image: sample.Image{H: 2, W: 2, C: 1}, ClassColumn: "label"}))
	if err != nil {
		t.Fatal(err)
	}
	root, err := fusefs.NewRoot(context.Background(), fusefs.Options{Samples: s})
	if err != nil {
		t.Fatal(err)
	}
	counter := &opcodeCounter{counts: map[string]int{}}
	opts := root.MountOptions("memtable", false, false) // the mount's own options
	opts.Debug = true
	opts.Logger = log.New(counter, "", 0)
	mnt := mounttest.InProcessRaw(t, root, opts)
	sd := filepath.Join(mnt, "version", "0", "shard", "0")

	epoch := func() int {
		n := 0
		err := filepath.WalkDir(sd, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			b := make([]byte, fi.Size()+1)
			k, _ := f.Read(b)
			if int64(k) != fi.Size() {
				t.Errorf("%s: read %d bytes, stat says %d", p, k, fi.Size())
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := epoch(); n != 301 { // 300 samples and _samples.tsv
		t.Fatalf("first epoch read %d files, want 301", n)
	}
	first := counter.take()
	if first["READ"] == 0 || first["LOOKUP"] == 0 {
		t.Fatalf("first epoch: requests %v, want READs and LOOKUPs (is the counter counting?)", first)
	}
	if n := epoch(); n != 301 {
		t.Fatalf("second epoch read %d files, want 301", n)
	}
	second := counter.take()
	var bad []string
	for _, op := range []string{"OPEN", "READ", "LOOKUP", "GETATTR", "FLUSH", "GETXATTR", "RELEASE"} {
		if second[op] > 0 {
			bad = append(bad, op)
		}
	}
	var all []string
	for op, n := range second {
		all = append(all, op+"="+strconv.Itoa(n))
	}
	sort.Strings(all)
	if len(bad) > 0 {
		t.Fatalf("second epoch sent %v; all requests: %s (first epoch: %v)", bad, strings.Join(all, " "), first)
	}
	t.Logf("first epoch requests %v; second epoch: %s", first, strings.Join(all, " "))
}
