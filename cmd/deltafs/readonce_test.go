package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafs/deltafs/fusefs/mounttest"
	"github.com/deltafs/deltafs/internal/testkit"
)

// TestMountColdEpochReadsDataOnce: samples served as the data column's
// bytes need the data for the sample index too (exact sizes, sniffed
// extensions). The index takes them through the page cache that reads use,
// so a cold epoch (index and every sample) reads the data files from
// storage once, not once for the index and again for the samples: each
// file's footer and page index are read once, shared by the index scan and
// the page fetcher, and the data pages that read took in are not read
// again; beyond that, only the magic bytes at the file's start.
func TestMountColdEpochReadsDataOnce(t *testing.T) {
	bin := mounttest.Binary(t)
	table := importDigits(t, bin, testkit.MNIST(t, testkit.MNISTTest)[:3000], 3000)
	var fileBytes int64
	entries, err := os.ReadDir(table)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".parquet") {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			fileBytes += info.Size()
		}
	}
	m := mounttest.Start(t, bin, table, "--cache-dir", t.TempDir())
	tree := readTree(t, filepath.Join(m.Dir, "version", "0"))
	if len(tree) != 3000 {
		t.Fatalf("%d sample files, want 3000", len(tree))
	}
	for p, b := range tree {
		if !strings.HasSuffix(p, ".bin") || len(b) != 784 {
			t.Fatalf("%s: %d bytes, want a 784-byte .bin", p, len(b))
		}
	}
	s := readStats(t, m.Dir)
	ratio := float64(s.Storage.DataFileBytesRead) / float64(fileBytes)
	t.Logf("cold epoch read %d bytes of %d in data files (%.2fx)", s.Storage.DataFileBytesRead, fileBytes, ratio)
	if ratio > 1.05 {
		t.Errorf("cold epoch read %.2fx the data files' bytes, want about 1", ratio)
	}
}
